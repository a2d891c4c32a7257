import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { leaseKeeper, type LeaseKeeper } from './lease-keeper.js';
import { openDatabase, type SqliteDatabase } from './sqlite/database.js';
import { leaseMigrations, sqliteLeases } from './sqlite/leases.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function leasesOnAFile() {
  const directory = await temporaryDirectory('gateway-lease-keeper-');
  const database: SqliteDatabase = openDatabase(join(directory.path, 'gateway.db'), leaseMigrations);
  cleanups.push(
    () => directory.cleanup(),
    () => database.close(),
  );
  return sqliteLeases(database);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the lease keeper', () => {
  it('gives back at once a lease whose role could not be taken up at start', async () => {
    const leases = await leasesOnAFile();
    let attempts = 0;
    const errors: unknown[] = [];
    const keeper: LeaseKeeper = leaseKeeper({
      leases,
      name: 'role',
      holder: 'process-1',
      leaseMs: 300,
      onTaken: () => {
        attempts += 1;
        throw new Error(`the role failed to start (${attempts})`);
      },
      onLost: () => undefined,
      onStepError: (error) => errors.push(error),
    });
    cleanups.push(() => keeper.stop());
    // The first attempt is start's own: its failure is start's, and the lease is free again at once.
    await expect(keeper.start()).rejects.toThrow('the role failed to start (1)');
    expect(keeper.held()).toBeUndefined();
    expect(await leases.holder('role')).toBeUndefined();
    expect(errors).toEqual([]);
  });

  it('a role that fails once on a step is tried again on the next one, and the lease is held once it starts', async () => {
    const leases = await leasesOnAFile();
    // Another process holds the lease at start, then lets it go: the keeper takes it on a step.
    const other = await leases.take('role', 'process-2', 60_000, Date.now());
    expect(other).toBeDefined();
    let attempts = 0;
    const errors: unknown[] = [];
    const keeper = leaseKeeper({
      leases,
      name: 'role',
      holder: 'process-1',
      leaseMs: 150,
      onTaken: () => {
        attempts += 1;
        if (attempts === 1) throw new Error('the role failed to start');
      },
      onLost: () => undefined,
      onStepError: (error) => errors.push(error),
    });
    cleanups.push(() => keeper.stop());
    await keeper.start();
    expect(keeper.held()).toBeUndefined();
    await leases.release('role', 'process-2', other!.token);
    const deadline = Date.now() + 5_000;
    while (keeper.held() === undefined && Date.now() < deadline) await sleep(10);
    expect(attempts).toBe(2);
    expect(errors.map((error) => (error as Error).message)).toEqual(['the role failed to start']);
    expect(keeper.held()).toBeDefined();
    expect((await leases.holder('role'))?.holder).toBe('process-1');
  });
});
