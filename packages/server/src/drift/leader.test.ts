import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig, type LoadedConfig } from '@gateway/core';
import { createGuardedAgent } from '@gateway/runtime';
import type { Dispatcher } from 'undici';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { PublicationRegistry } from '../publications/registry.js';
import { openDatabase, type SqliteDatabase } from '../store/sqlite/database.js';
import { leaseMigrations, sqliteLeases } from '../store/sqlite/leases.js';
import { DRIFT_LEADER_LEASE, startDrift, type DriftLeadership } from './leader.js';
import { driftMigrations, sqliteDriftStore } from './sqlite/index.js';

const CHILD = fileURLToPath(new URL('../../test/support/drift-leader-child.mjs', import.meta.url));
const DOCUMENT = `openapi: 3.1.0
info: { title: Orders, version: '1' }
paths:
  /orders:
    get:
      operationId: listOrders
      responses: { '200': { description: ok } }
`;
const silent = { info() {}, warn() {}, error() {} };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Two processes on one database file: the checks run in the holder of the drift-leader lease only. */
describe('the drift leader', () => {
  let directory: { path: string; cleanup: () => Promise<void> };
  let server: Server;
  let documentUrl: string;
  /** Who fetched the description, in order (the `x-drift-holder` each process tags its requests with). */
  let fetchedBy: string[];
  const databases: SqliteDatabase[] = [];
  const started: DriftLeadership[] = [];
  const agents: Dispatcher[] = [];
  let child: ChildProcess | undefined;

  beforeEach(async () => {
    directory = await temporaryDirectory('gateway-drift-leader-');
    fetchedBy = [];
    server = createServer((request, response) => {
      fetchedBy.push(String(request.headers['x-drift-holder']));
      response.writeHead(200, { 'content-type': 'application/yaml' }).end(DOCUMENT);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    documentUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/openapi.yaml`;
  });
  afterEach(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    child = undefined;
    for (const drift of started.splice(0)) await drift.stop();
    for (const database of databases.splice(0)) database.close();
    for (const agent of agents.splice(0)) await agent.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await directory.cleanup();
  });

  function config(): LoadedConfig {
    return parseConfig(
      `gateway:\n  url: http://127.0.0.1:8080\nsources:\n  orders:\n    kind: openapi\n    document: '${documentUrl}'\n`,
      join(directory.path, 'gateway.yaml'),
    );
  }

  /** One process's drift, in this process: its own connection to the shared file, its requests tagged `holder`. */
  async function startIn(holder: string, leaseMs: number): Promise<DriftLeadership> {
    const database = openDatabase(join(directory.path, 'gateway.db'), [...driftMigrations, ...leaseMigrations]);
    databases.push(database);
    const guarded = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
    agents.push(guarded);
    const agent = guarded.compose(
      (dispatch) => (options, handler) =>
        dispatch({ ...options, headers: { ...(options.headers as Record<string, string>), 'x-drift-holder': holder } }, handler),
    );
    const drift = await startDrift({
      loaded: config(),
      store: sqliteDriftStore(database),
      leases: sqliteLeases(database),
      registry: new PublicationRegistry(),
      agent,
      logger: silent,
      intervalMs: 50,
      holder,
      leaseMs,
    });
    started.push(drift);
    return drift;
  }

  it('only the lease holder polls; when it dies without releasing, another process takes over after the expiry', async () => {
    // Long enough that a loaded machine's event-loop lag does not delay a renewal past the expiry.
    const leaseMs = 4000;
    // Process a: a child process, so it can die as a process dies (SIGKILL: no release, its lease simply expires).
    child = spawn(process.execPath, [CHILD, directory.path, documentUrl, 'a', String(leaseMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let childSaid = '';
    child.stdout!.on('data', (chunk: Buffer) => (childSaid += chunk.toString('utf8')));
    await until(() => childSaid.includes('\n'), 'the child to start', 30_000);
    expect(childSaid.trim()).toBe('leader');

    // Past its first rounds (its start-up work done), a alone reads the description, however long b waits.
    await until(() => fetchedBy.length >= 3, 'a few rounds of a', 10 * leaseMs);
    const b = await startIn('b', leaseMs);
    expect(b.isLeader()).toBe(false);
    await sleep(leaseMs);
    expect(b.isLeader()).toBe(false);
    expect(new Set(fetchedBy)).toEqual(new Set(['a']));

    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    const fetchedBeforeTakeover = fetchedBy.length;
    // The lease a left behind (unless it ran out already): b must not lead before it expires.
    const leftBehind = await sqliteLeases(databases[0]!).holder(DRIFT_LEADER_LEASE);
    expect([undefined, 'a']).toContain(leftBehind?.holder);
    await until(() => b.isLeader(), 'b to take the lease over', 5 * leaseMs);
    if (leftBehind) expect(Date.now()).toBeGreaterThanOrEqual(leftBehind.expiresAt);
    await until(() => fetchedBy.length > fetchedBeforeTakeover, 'b to read the description');
    expect(new Set(fetchedBy.slice(fetchedBeforeTakeover))).toEqual(new Set(['b']));
  }, 90_000);

  it('a leader that stops releases the lease, so another process takes over before it would have expired', async () => {
    const leaseMs = 3000;
    const a = await startIn('a', leaseMs);
    const b = await startIn('b', leaseMs);
    expect([a.isLeader(), b.isLeader()]).toEqual([true, false]);
    await until(() => fetchedBy.length > 0, 'a to read the description');
    await a.stop();
    const stoppedAt = Date.now();
    const fetchedByA = fetchedBy.length;
    await until(() => b.isLeader(), 'b to take the lease over', leaseMs);
    expect(Date.now() - stoppedAt).toBeLessThan(leaseMs);
    await until(() => fetchedBy.length > fetchedByA, 'b to read the description');
    expect(new Set(fetchedBy.slice(fetchedByA))).toEqual(new Set(['b']));
  });

  it('a leader whose store fails stops checking, at the latest when its lease runs out', async () => {
    const leaseMs = 1200;
    const a = await startIn('a', leaseMs);
    await until(() => fetchedBy.length > 0, 'a to read the description');
    // Its connection gone: the next renewal fails, and a follows (it cannot prove it still holds the lease).
    databases[0]!.close();
    await until(() => !a.isLeader(), 'a to step down', 2 * leaseMs);
    const fetched = fetchedBy.length;
    await sleep(5 * 50 + 100);
    expect(fetchedBy.length).toBeLessThanOrEqual(fetched + 1);
  });
});
