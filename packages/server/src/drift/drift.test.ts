import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { importOpenApiText, parseConfig, type LockedOperation, type LoadedConfig, type Operation } from '@gateway/core';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { lockWith } from '../../test/support/fixtures.js';
import { createGuardedAgent } from '@gateway/runtime';
import { PublicationRegistry } from '../publications/registry.js';
import { openDatabase, type SqliteDatabase } from '../store/sqlite/database.js';
import { compareWithPublication, followDrift, startDriftWatcher, type DriftWatcher } from './index.js';
import { driftMigrations, sqliteDriftStore } from './sqlite/index.js';
import { eventually } from '../store/contract/changes.contract.js';
import { changeMigrations, sqliteChangeFeed } from '../store/sqlite/changes.js';

function op(tool: string, fingerprint: string): Pick<Operation, 'tool' | 'fingerprint'> {
  return { tool, fingerprint };
}

describe('compareWithPublication', () => {
  it('a changed fingerprint blocks the tool with a reason naming both fingerprints', () => {
    const result = compareWithPublication(
      [op('get_order', 'sha256:aaaaaaaaaaaaaaaa'), op('list_orders', 'sha256:1')],
      [op('get_order', 'sha256:bbbbbbbbbbbbbbbb'), op('list_orders', 'sha256:1')],
    );
    expect([...result.blocked.keys()]).toEqual(['get_order']);
    expect(result.blocked.get('get_order')).toBe(
      'operation changed in the live description (fingerprint sha256:aaaaaaaaaaaa… → sha256:bbbbbbbbbbbb…)',
    );
    expect(result.changed).toEqual([{ tool: 'get_order', from: 'sha256:aaaaaaaaaaaaaaaa', to: 'sha256:bbbbbbbbbbbbbbbb' }]);
    expect(result.removed).toEqual([]);
  });

  it('a vanished operation blocks the tool as removed', () => {
    const result = compareWithPublication([op('delete_order', 'sha256:d')], []);
    expect(result.removed).toEqual(['delete_order']);
    expect(result.blocked.get('delete_order')).toBe('operation removed from the live description');
  });

  it('unchanged operations are not blocked and new ones are only reported as added', () => {
    const result = compareWithPublication([op('a', 'sha256:1')], [op('a', 'sha256:1'), op('b', 'sha256:2')]);
    expect(result.blocked.size).toBe(0);
    expect(result.added).toEqual(['b']);
  });

  it('an operation renamed with the exact same request keeps working', () => {
    const result = compareWithPublication([op('old_name', 'sha256:same')], [op('new_name', 'sha256:same')]);
    expect(result.blocked.size).toBe(0);
    expect(result.added).toEqual(['new_name']);
  });

  it('operations the publication records as not offered are not added while unchanged; changed since, a person looks', () => {
    const unchanged = compareWithPublication([op('a', 'sha256:1')], [op('a', 'sha256:1'), op('b', 'sha256:2')], [op('b', 'sha256:2')]);
    expect(unchanged.added).toEqual([]);
    const changed = compareWithPublication([op('a', 'sha256:1')], [op('a', 'sha256:1'), op('b', 'sha256:2')], [op('b', 'sha256:9')]);
    expect(changed.added).toEqual(['b']);
    expect(changed.blocked.size).toBe(0);
  });
});

const ORIGINAL = `openapi: 3.1.0
info: { title: Orders, version: '1' }
servers: [{ url: 'http://127.0.0.1:9/api' }]
paths:
  /orders:
    get:
      operationId: listOrders
      responses: { '200': { description: ok } }
  /orders/{id}:
    get:
      operationId: getOrder
      parameters: [{ name: id, in: path, required: true, schema: { type: string } }]
      responses: { '200': { description: ok } }
    delete:
      operationId: deleteOrder
      parameters: [{ name: id, in: path, required: true, schema: { type: string } }]
      responses: { '204': { description: gone } }
`;

// getOrder gains a required query parameter (its request changes); deleteOrder is gone.
const DRIFTED = ORIGINAL.replace(
  "parameters: [{ name: id, in: path, required: true, schema: { type: string } }]\n      responses: { '200'",
  'parameters: [{ name: id, in: path, required: true, schema: { type: string } }, { name: expand, in: query, required: true, ' +
    "schema: { type: string } }]\n      responses: { '200'",
).replace(/ {4}delete:\n(.*\n){3}/, '');

// A new operation upstream (nothing else changes).
const ADDED = ORIGINAL.replace(
  '  /orders/{id}:\n',
  "    post:\n      operationId: createOrder\n      responses: { '201': { description: created } }\n  /orders/{id}:\n",
);

describe('the drift watcher', () => {
  let directory: { path: string; cleanup: () => Promise<void> };
  let server: Server;
  let baseUrl: string;
  let served = ORIGINAL;
  let status = 200;
  const conditionalRequests: string[] = [];
  let database: SqliteDatabase;
  let registry: PublicationRegistry;
  let watcher: DriftWatcher | undefined;
  const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
  const logs: Array<{ object: object; message?: string }> = [];
  const logger = {
    info: (object: object, message?: string) => logs.push({ object, message }),
    warn: (object: object, message?: string) => logs.push({ object, message }),
    error: (object: object, message?: string) => logs.push({ object, message }),
  };

  beforeAll(async () => {
    server = createServer((incoming, response) => {
      const etag = `"${Buffer.from(served).length}-${served.length % 97}"`;
      if (status !== 200) {
        response.writeHead(status).end('unavailable');
        return;
      }
      if (incoming.headers['if-none-match'] === etag) {
        conditionalRequests.push('304');
        response.writeHead(304, { etag }).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/yaml', etag }).end(served);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await agent.close();
  });

  beforeEach(async () => {
    directory = await temporaryDirectory('gateway-drift-');
    served = ORIGINAL;
    status = 200;
    database = openDatabase(join(directory.path, 'gateway.db'), driftMigrations);
    registry = new PublicationRegistry();
    const imported = await importOpenApiText(ORIGINAL, 'openapi.yaml', { baseDirectory: directory.path });
    const operations: LockedOperation[] = imported.operations.map((operation) => ({ ...operation, selected: true }));
    registry.replace(lockWith(operations, { source: 'orders' }));
  });
  afterEach(async () => {
    await watcher?.stop();
    watcher = undefined;
    database.close();
    await directory.cleanup();
  });

  function config(document: string): LoadedConfig {
    return parseConfig(
      `gateway:\n  url: http://127.0.0.1:8080\nsources:\n  orders:\n    kind: openapi\n    document: '${document}'\n`,
      join(directory.path, 'gateway.yaml'),
    );
  }

  function callable(tool: string): boolean {
    return registry.snapshot().tools.has(tool) && registry.blockedReason('orders', tool) === undefined;
  }

  it('a worker that does not check drift applies the blocks the checking worker records in the database, and lifts them', async () => {
    const loaded = config(`${baseUrl}/openapi.yaml`);
    watcher = await startDriftWatcher({
      loaded,
      store: sqliteDriftStore(database),
      registry,
      agent,
      logger,
      intervalMs: 60_000,
      schedule: false,
    });
    // Another worker: its own connection to the same database file, its own registry with the same lock.
    const otherDatabase = openDatabase(join(directory.path, 'gateway.db'), driftMigrations);
    const otherRegistry = new PublicationRegistry();
    otherRegistry.replace(
      lockWith(
        registry.snapshot().names.map((name) => ({ ...(registry.snapshot().tools.get(name)!.entry as LockedOperation), selected: true })),
        { source: 'orders' },
      ),
    );
    const follower = await followDrift({ loaded, store: sqliteDriftStore(otherDatabase), registry: otherRegistry, intervalMs: 60_000 });
    try {
      served = DRIFTED;
      await watcher.checkNow();
      expect(otherRegistry.blockedReason('orders', 'get_order')).toBeUndefined();
      await follower.checkNow();
      expect(otherRegistry.blockedReason('orders', 'get_order')).toBe(registry.blockedReason('orders', 'get_order'));
      expect(otherRegistry.blockedReason('orders', 'delete_order')).toBe('operation removed from the live description');
      expect(otherRegistry.blockedReason('orders', 'list_orders')).toBeUndefined();
      expect(follower.report()[0]).toMatchObject({ status: 'drifted', proposal: { changed: ['get_order'], removed: ['delete_order'] } });

      served = ORIGINAL;
      await watcher.checkNow();
      await follower.checkNow();
      expect(otherRegistry.blockedReason('orders', 'get_order')).toBeUndefined();
      expect(follower.report()[0]).toMatchObject({ status: 'in-sync', blockedTools: [] });
    } finally {
      await follower.stop();
      otherDatabase.close();
    }
  });

  it('a block the checking process records reaches a follower through the change feed within a second, as does its lifting', async () => {
    const loaded = config(`${baseUrl}/openapi.yaml`);
    // Two processes' connections to the file, each with its own feed (what `serve --workers` opens per worker).
    const databases = [0, 1].map(() => openDatabase(join(directory.path, 'gateway.db'), [...driftMigrations, ...changeMigrations]));
    const [leaderFeed, followerFeed] = databases.map((connection) => sqliteChangeFeed(connection));
    watcher = await startDriftWatcher({
      loaded,
      store: sqliteDriftStore(databases[0]!),
      registry,
      agent,
      logger,
      intervalMs: 60_000,
      schedule: false,
      changes: leaderFeed!,
    });
    const otherRegistry = new PublicationRegistry();
    otherRegistry.replace(
      lockWith(
        registry.snapshot().names.map((name) => ({ ...(registry.snapshot().tools.get(name)!.entry as LockedOperation), selected: true })),
        { source: 'orders' },
      ),
    );
    // Its own periodic read is a minute away: only the announcement can bring the block in time.
    const follower = await followDrift({
      loaded,
      store: sqliteDriftStore(databases[1]!),
      registry: otherRegistry,
      intervalMs: 60_000,
      changes: followerFeed!,
    });
    try {
      served = DRIFTED;
      await watcher.checkNow();
      const checkedAt = Date.now();
      await eventually(() => otherRegistry.blockedReason('orders', 'get_order') !== undefined);
      expect(Date.now() - checkedAt).toBeLessThan(1_000);
      expect(otherRegistry.blockedReason('orders', 'delete_order')).toBe('operation removed from the live description');
      expect(otherRegistry.blockedReason('orders', 'list_orders')).toBeUndefined();

      served = ORIGINAL;
      await watcher.checkNow();
      await eventually(() => otherRegistry.blockedReason('orders', 'get_order') === undefined);
      expect(otherRegistry.blockedReason('orders', 'delete_order')).toBeUndefined();
    } finally {
      await follower.stop();
      for (const feed of [leaderFeed, followerFeed]) await feed!.close();
      await watcher.stop();
      watcher = undefined;
      for (const connection of databases) connection.close();
    }
  });

  it('a changed or removed operation is blocked, an unchanged one stays callable, restoring unblocks', async () => {
    watcher = await startDriftWatcher({
      loaded: config(`${baseUrl}/openapi.yaml`),
      store: sqliteDriftStore(database),
      registry,
      agent,
      logger,
      intervalMs: 60_000,
      schedule: false,
    });
    await watcher.checkNow();
    expect(watcher.report()[0]).toMatchObject({ status: 'in-sync', blockedTools: [], publication: 'publication-1' });
    expect(callable('get_order') && callable('delete_order') && callable('list_orders')).toBe(true);

    served = DRIFTED;
    await watcher.checkNow();
    expect(callable('list_orders')).toBe(true);
    expect(callable('get_order')).toBe(false);
    expect(callable('delete_order')).toBe(false);
    expect(registry.blockedReason('orders', 'get_order')).toMatch(
      /^operation changed in the live description \(fingerprint sha256:[0-9a-f]{12}… → sha256:[0-9a-f]{12}…\)$/,
    );
    expect(registry.blockedReason('orders', 'delete_order')).toBe('operation removed from the live description');
    const report = watcher.report()[0]!;
    expect(report.status).toBe('drifted');
    expect(report.proposal).toMatchObject({ changed: ['get_order'], removed: ['delete_order'], added: [] });

    // The proposal is in SQLite with the normalised operations, once per distinct digest.
    await watcher.checkNow();
    const rows = database.prepare('SELECT document_digest, operations_json FROM drift_proposals').all() as Array<{
      document_digest: string;
      operations_json: string;
    }>;
    expect(rows).toHaveLength(1);
    expect(rows[0]!.document_digest).toBe(report.proposal!.digest);
    expect((JSON.parse(rows[0]!.operations_json) as Operation[]).map((operation) => operation.tool)).toEqual(['list_orders', 'get_order']);

    served = ORIGINAL;
    await watcher.checkNow();
    expect(callable('get_order') && callable('delete_order')).toBe(true);
    expect(watcher.report()[0]).toMatchObject({ status: 'in-sync', blockedTools: [] });
    expect(watcher.report()[0]!.proposal).toBeUndefined();
  });

  it('an unchanged URL document is revalidated with If-None-Match', async () => {
    watcher = await startDriftWatcher({
      loaded: config(`${baseUrl}/openapi.yaml`),
      store: sqliteDriftStore(database),
      registry,
      agent,
      logger,
      intervalMs: 60_000,
      schedule: false,
    });
    await watcher.checkNow();
    const before = conditionalRequests.length;
    await watcher.checkNow();
    expect(conditionalRequests.length).toBe(before + 1);
    expect(watcher.report()[0]!.status).toBe('in-sync');
  });

  it('an unreachable or invalid document changes nothing and is reported', async () => {
    watcher = await startDriftWatcher({
      loaded: config(`${baseUrl}/openapi.yaml`),
      store: sqliteDriftStore(database),
      registry,
      agent,
      logger,
      intervalMs: 60_000,
      schedule: false,
    });
    served = DRIFTED;
    await watcher.checkNow();
    expect(callable('get_order')).toBe(false);

    status = 503;
    await watcher.checkNow();
    expect(watcher.report()[0]).toMatchObject({ status: 'error', error: { code: 'DRIFT_DOCUMENT_UNAVAILABLE' } });
    expect(callable('get_order')).toBe(false); // still blocked: nothing changed
    expect(callable('list_orders')).toBe(true);

    status = 200;
    served = 'openapi: 3.1.0\ninfo: [not valid';
    await watcher.checkNow();
    expect(watcher.report()[0]!.status).toBe('error');
    expect(callable('get_order')).toBe(false);
    expect(callable('list_orders')).toBe(true);
  });

  it('a description on a private address without an allowlist is refused by the SSRF guard', async () => {
    const strict = createGuardedAgent({});
    watcher = await startDriftWatcher({
      loaded: config(`${baseUrl}/openapi.yaml`),
      store: sqliteDriftStore(database),
      registry,
      agent: strict,
      logger,
      intervalMs: 60_000,
      schedule: false,
    });
    await watcher.checkNow();
    expect(watcher.report()[0]).toMatchObject({ status: 'error', error: { code: 'SSRF_ADDRESS_REFUSED' } });
    expect(callable('get_order')).toBe(true);
    await strict.close();
  });

  it('a file document is re-read, and the interval alone finds the drift', async () => {
    const path = join(directory.path, 'openapi.yaml');
    await writeFile(path, ORIGINAL);
    watcher = await startDriftWatcher({
      loaded: config('openapi.yaml'),
      store: sqliteDriftStore(database),
      registry,
      agent,
      logger,
      intervalMs: 50,
    });
    await writeFile(path, DRIFTED);
    const deadline = Date.now() + 5_000;
    while (callable('get_order') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(callable('get_order')).toBe(false);
    expect(callable('list_orders')).toBe(true);
  });

  it('recorded blocks are re-applied at start-up while the same publication is in use', async () => {
    watcher = await startDriftWatcher({
      loaded: config(`${baseUrl}/openapi.yaml`),
      store: sqliteDriftStore(database),
      registry,
      agent,
      logger,
      intervalMs: 60_000,
      schedule: false,
    });
    served = DRIFTED;
    await watcher.checkNow();
    await watcher.stop();
    const restarted = new PublicationRegistry();
    const imported = await importOpenApiText(ORIGINAL, 'openapi.yaml', { baseDirectory: directory.path });
    restarted.replace(
      lockWith(
        imported.operations.map((operation) => ({ ...operation, selected: true })),
        { source: 'orders' },
      ),
    );
    registry = restarted;
    watcher = await startDriftWatcher({
      loaded: config(`${baseUrl}/openapi.yaml`),
      store: sqliteDriftStore(database),
      registry,
      agent,
      logger,
      intervalMs: 60_000,
      schedule: false,
    });
    expect(callable('get_order')).toBe(false);
    expect(callable('list_orders')).toBe(true);
  });

  it('tools added upstream are drift: a proposal numbered as import will number it, its change in words', async () => {
    watcher = await startDriftWatcher({
      loaded: config(`${baseUrl}/openapi.yaml`),
      store: sqliteDriftStore(database),
      registry,
      agent,
      logger,
      intervalMs: 60_000,
      schedule: false,
    });
    await watcher.checkNow();
    expect(watcher.report()[0]).toMatchObject({ status: 'in-sync' });
    served = ADDED;
    await watcher.checkNow();
    const report = watcher.report()[0]!;
    expect(report.status).toBe('drifted');
    expect(report.blockedTools).toEqual([]);
    expect(callable('list_orders') && callable('get_order')).toBe(true);
    // The lock served has lastPublication 99 and no proposal for orders: `gateway import` would write publication-100.
    expect(report.proposal).toMatchObject({
      id: 'publication-100',
      added: ['create_order'],
      changed: [],
      removed: [],
      toolCount: 3,
      summary: ['added create_order (POST /orders): new in the live description'],
    });
  });

  it('a reload re-reads the live description before judging the new publication (changed, imported, published at once)', async () => {
    watcher = await startDriftWatcher({
      loaded: config(`${baseUrl}/openapi.yaml`),
      store: sqliteDriftStore(database),
      registry,
      agent,
      logger,
      intervalMs: 60_000,
      schedule: false,
    });
    await watcher.checkNow();
    // The description changes and is published right away, before any interval check read it.
    served = ADDED;
    const imported = await importOpenApiText(ADDED, 'openapi.yaml', { baseDirectory: directory.path });
    const lock = lockWith(
      imported.operations.map((operation) => ({ ...operation, selected: true })),
      { source: 'orders', publicationId: 'publication-2' },
    );
    await watcher.prepareFor!(lock);
    registry.replace(lock);
    // No check in between: the swap itself judged the new publication against the description as it is now.
    expect(callable('create_order')).toBe(true);
    expect(registry.blockedTools().size).toBe(0);
    expect(watcher.report()[0]).toMatchObject({ publication: 'publication-2', blockedTools: [] });
  });

  it('a new publication matching the live description unblocks at once (hot reload)', async () => {
    watcher = await startDriftWatcher({
      loaded: config(`${baseUrl}/openapi.yaml`),
      store: sqliteDriftStore(database),
      registry,
      agent,
      logger,
      intervalMs: 60_000,
      schedule: false,
    });
    served = DRIFTED;
    await watcher.checkNow();
    expect(callable('get_order')).toBe(false);
    const imported = await importOpenApiText(DRIFTED, 'openapi.yaml', { baseDirectory: directory.path });
    registry.replace(
      lockWith(
        imported.operations.map((operation) => ({ ...operation, selected: true })),
        { source: 'orders', publicationId: 'publication-2' },
      ),
    );
    await watcher.checkNow();
    expect(callable('get_order')).toBe(true);
    expect(watcher.report()[0]).toMatchObject({ status: 'in-sync', publication: 'publication-2' });
  });
});
