/**
 * Checkpoints of a log shared by several processes are signed by one at a time, the holder of the
 * `checkpoint-signer` lease: two receipt logs over two PostgreSQL pools (two replicas), or two connections to one
 * SQLite file (`serve --workers`), each counting the checkpoints it stored (its hook hears only its own).
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig, verifyReceiptLog, type LoadedConfig } from '@gateway/core';
import { createVault, type Vault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { postgresForThisFile } from '../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../test/support/databases.js';
import { postgresMigrations } from '../storage.js';
import type { ChangeFeed } from '../store/changes.js';
import type { Leases } from '../store/leases.js';
import { openPostgres } from '../store/postgres/database.js';
import { openPostgresChangeFeed } from '../store/postgres/changes.js';
import { postgresLeases } from '../store/postgres/leases.js';
import { changeMigrations, sqliteChangeFeed } from '../store/sqlite/changes.js';
import { openDatabase, type SqliteDatabase } from '../store/sqlite/database.js';
import { leaseMigrations, sqliteLeases } from '../store/sqlite/leases.js';
import { CHECKPOINT_SIGNER_LEASE } from './checkpointing.js';
import { createReceiptLog, type ReceiptLog } from './log.js';
import { postgresReceiptStorage } from './postgres/index.js';
import { receiptMigrations, sqliteReceiptStorage } from './sqlite/index.js';
import type { ReceiptStorage, StoredCheckpoint } from './store.js';
import { verifyStoredLog } from './verification.js';

const postgres = postgresForThisFile();
const EVERY_RECEIPTS = 5;
/** Short, so that a takeover after an expiry fits in a test; renewed every third of it. */
const LEASE_MS = 900;

let directory: { path: string; cleanup: () => Promise<void> };
let loaded: LoadedConfig;
let vault: Vault;
const cleanups: Array<() => Promise<void> | void> = [];

beforeEach(async () => {
  directory = await temporaryDirectory('gateway-checkpoint-lease-');
  // Checkpoints every 5 receipts; the timer (a minute) stays out of the way.
  loaded = parseConfig(
    [
      'gateway:\n  url: http://127.0.0.1:8080\nsources: {}',
      `receipts:\n  checkpoint:\n    everyReceipts: ${EVERY_RECEIPTS}\n    everySeconds: 60\n`,
    ].join('\n'),
    join(directory.path, 'gateway.yaml'),
  );
  // One vault for both processes: the signing key is shared, as `--workers` and replicas require.
  vault = await createVault(loaded, { env: { PATH: process.env.PATH } });
});

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups.length = 0;
  await directory.cleanup();
});

interface Process {
  name: string;
  log: ReceiptLog;
  /** The checkpoints this process stored (its hook runs in the unit of work of each new one it stores). */
  signed: StoredCheckpoint[];
  warnings: string[];
  close(): Promise<void>;
}

async function startProcess(
  name: string,
  storage: ReceiptStorage,
  leases: Leases,
  changes: ChangeFeed,
  leaseMs = LEASE_MS,
): Promise<Process> {
  const signed: StoredCheckpoint[] = [];
  const warnings: string[] = [];
  const log = await createReceiptLog({
    ...storage,
    vault,
    loaded,
    requiresSharedSigningKey: true,
    signingLease: { leases, changes, holder: name, leaseMs },
    hooks: [{ onReceipt: () => undefined, onCheckpoint: (checkpoint) => void signed.push(checkpoint) }],
    warn: (message) => warnings.push(message),
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await log.close();
    await log.anchor.settled();
  };
  cleanups.push(close);
  return { name, log, signed, warnings, close };
}

async function record(process: Process, count: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    await process.log.record({
      time: new Date().toISOString(),
      session: null,
      person: null,
      clientId: null,
      tool: `${process.name}.tool`,
      source: 'demo',
      publication: null,
      fingerprint: null,
      login: null,
      outcome: 'allowed',
      reason: null,
      upstreamStatus: 200,
      durationMs: 1,
      argumentsValue: { index },
      resultValue: { ok: true },
    });
  }
}

/** Waits (bounded) until `condition` holds; fails the test with `what` otherwise. */
async function eventually(what: string, condition: () => Promise<boolean> | boolean, timeoutMs = 8_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const isCovered = async (process: Process) =>
  ((await process.log.store.latestCheckpoint())?.treeSize ?? 0) === (await process.log.store.head()).size;

/** Verification over the stored log (the checkpoints of every signer) and the core verifier over the same. */
async function expectVerified(process: Process): Promise<void> {
  const verification = await verifyStoredLog(process.log);
  expect(verification.problems).toEqual([]);
  expect(verification.ok).toBe(true);
}

interface Connection {
  /** How long the processes' leases last. */
  leaseMs?: number;
  /** A holder that died holds the lease when the processes start: nobody renews or releases it. */
  deadHolder?: boolean;
}

/** Takes the lease for a holder that will never renew nor release it. */
async function leaveDeadHolder(leases: Leases, leaseMs = LEASE_MS): Promise<void> {
  expect(await leases.take(CHECKPOINT_SIGNER_LEASE, 'dead-replica', leaseMs)).toMatchObject({ holder: 'dead-replica' });
}

/** Two processes on one log: what both storages must show. */
function sharedLogRules(connect: (options?: Connection) => Promise<{ first: Process; second: Process; leases: Leases }>): void {
  it('only the holder of the signer lease signs; the other asks it; when the holder closes the other takes over', async () => {
    const { first, second } = await connect();
    expect(first.log.isCheckpointSigner()).toBe(true);
    expect(second.log.isCheckpointSigner()).toBe(false);

    // Receipts through both, then through the second only: every checkpoint is the first's.
    for (let round = 0; round < 3; round += 1) {
      await record(first, 3);
      await record(second, 4);
    }
    await record(second, 2 * EVERY_RECEIPTS + 1);
    // The other process asks the holder once N receipts follow the last checkpoint: at most N - 1 wait for the next.
    await eventually('the holder signed what the other process appended', async () => {
      const latest = (await second.log.store.latestCheckpoint())?.treeSize ?? 0;
      return latest > 21 && (await second.log.store.head()).size - latest < EVERY_RECEIPTS;
    });
    // On demand (an export, a proof, a verification) the other process gets the holder's checkpoint too.
    await record(second, 2);
    const onDemand = await second.log.checkpoint();
    expect(onDemand?.treeSize).toBe((await second.log.store.head()).size);
    expect(second.signed).toEqual([]);
    expect(first.signed.length).toBeGreaterThanOrEqual(4);
    expect((await first.log.store.checkpoints()).length).toBe(first.signed.length);
    await expectVerified(second);

    // A clean close signs a final checkpoint and releases the lease: the other takes over within a step.
    await record(second, 1);
    await first.close();
    await eventually('the other process holds the lease', () => second.log.isCheckpointSigner(), 3_000);
    await record(second, EVERY_RECEIPTS);
    await eventually('the new holder signed', () => second.signed.length > 0 && isCovered(second));
    const checkpoints = await second.log.store.checkpoints();
    expect(checkpoints.length).toBe(first.signed.length + second.signed.length);
    await expectVerified(second);
    const core = verifyReceiptLog({
      receipts: (await second.log.store.list({ limit: 1_000 })).map((receipt) => ({ receipt })),
      checkpoints: checkpoints.map((checkpoint) => ({ note: checkpoint.note })),
      trustedKeys: second.log.trustedKeys,
      uncoveredBound: EVERY_RECEIPTS,
    });
    expect(core.problems).toEqual([]);
    expect(core.ok).toBe(true);
  });

  it('a holder that died (its lease left to expire) is taken over within the lease, and what it left unsigned is signed', async () => {
    const diedAt = Date.now();
    const { first, second } = await connect({ deadHolder: true });
    expect(first.log.isCheckpointSigner()).toBe(false);
    expect(second.log.isCheckpointSigner()).toBe(false);
    await record(first, EVERY_RECEIPTS);
    await record(second, EVERY_RECEIPTS + 1);
    expect(await first.log.store.latestCheckpoint()).toBeUndefined();
    await eventually('a process takes the expired lease', () => first.log.isCheckpointSigner() || second.log.isCheckpointSigner());
    expect(Date.now() - diedAt).toBeLessThan(2 * LEASE_MS + 1_000);
    const [holder, other] = first.log.isCheckpointSigner() ? [first, second] : [second, first];
    expect(other.log.isCheckpointSigner()).toBe(false);
    await eventually('the new holder signed what was left', () => isCovered(holder));
    expect(holder.signed.length).toBeGreaterThan(0);
    expect(other.signed).toEqual([]);
    await expectVerified(other);
  });

  it('a verification right after the holder died waits for the takeover: its checkpoint covers what the dead holder left', async () => {
    // A lease longer than a live holder's answer takes (5 s): the old wait gave up before anyone could sign.
    const leaseMs = 6_000;
    const { first } = await connect({ deadHolder: true, leaseMs });
    expect(first.log.isCheckpointSigner()).toBe(false);
    await record(first, EVERY_RECEIPTS + 1);
    const { size } = await first.log.store.head();
    const asked = Date.now();
    const checkpoint = await first.log.checkpoint();
    expect(checkpoint?.treeSize).toBe(size);
    expect(Date.now() - asked).toBeLessThan(2 * leaseMs + 5_000);
    await expectVerified(first);
  }, 30_000);

  it('a process whose lease another took since stores no checkpoint (the token is checked where it is stored)', async () => {
    // A long lease: the first process still believes it holds it when another takes it (its clock was off).
    const { first, leases } = await connect({ leaseMs: 60_000 });
    expect(first.log.isCheckpointSigner()).toBe(true);
    const before = (await first.log.store.checkpoints()).length;
    const current = (await leases.holder(CHECKPOINT_SIGNER_LEASE))!;
    const taken = await leases.take(CHECKPOINT_SIGNER_LEASE, 'intruder', 60_000, current.expiresAt + 1);
    expect(taken?.token).toBeGreaterThan(current.token);
    expect(first.log.isCheckpointSigner()).toBe(true);
    await record(first, EVERY_RECEIPTS * 2);
    await first.log.checkpoint();
    expect((await first.log.store.checkpoints()).length).toBe(before);
    expect(first.signed.length).toBe(before);
  });
}

describe('checkpoint signing under a lease, two replicas on one PostgreSQL', () => {
  sharedLogRules(async (options = {}) => {
    const database = await freshPostgresDatabase(postgres.server, postgresMigrations);
    cleanups.push(() => database.close());
    if (options.deadHolder) await leaveDeadHolder(postgresLeases(database.pool), options.leaseMs);
    const processes: Process[] = [];
    const leases: Leases[] = [];
    for (const name of ['replica-a', 'replica-b']) {
      const pool = openPostgres(database.url, { max: 4 });
      cleanups.push(() => pool.end());
      const changes = await openPostgresChangeFeed(pool, database.url);
      cleanups.push(() => changes.close());
      leases.push(postgresLeases(pool));
      processes.push(await startProcess(name, postgresReceiptStorage(pool), leases.at(-1)!, changes, options.leaseMs));
    }
    return { first: processes[0]!, second: processes[1]!, leases: leases[1]! };
  });
});

describe('checkpoint signing under a lease, two workers on one SQLite file', () => {
  sharedLogRules(async (options = {}) => {
    const path = join(directory.path, 'gateway.db');
    const processes: Process[] = [];
    const databases: SqliteDatabase[] = [];
    for (const name of ['worker-1', 'worker-2']) {
      const database = openDatabase(path, [...receiptMigrations, ...leaseMigrations, ...changeMigrations]);
      databases.push(database);
      cleanups.push(() => {
        database.close();
      });
      if (options.deadHolder && databases.length === 1) await leaveDeadHolder(sqliteLeases(database), options.leaseMs);
      const changes = sqliteChangeFeed(database, { pollIntervalMs: 20 });
      cleanups.push(() => changes.close());
      processes.push(await startProcess(name, sqliteReceiptStorage(database), sqliteLeases(database), changes, options.leaseMs));
    }
    return { first: processes[0]!, second: processes[1]!, leases: sqliteLeases(databases[1]!) };
  });
});
