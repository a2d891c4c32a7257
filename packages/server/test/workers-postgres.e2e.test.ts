/**
 * `gateway serve --workers 2` on PostgreSQL (`storage: { kind: postgres }`), the built binary as a subprocess on a
 * throw-away cluster (test-support/postgres.ts): each worker opens its own pool and change feed, the migrations run
 * once, a person approves a session through the cluster, SDK clients of both eras (v2 on 2026-07-28, 1.x on
 * 2025-11-25) call through both workers, every receipt is in the database before its answer (no journal file),
 * the log is contiguous and `gateway receipts verify` passes, and the one dispatcher (a lease, not a worker
 * number) delivers the events in receipt order.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PeopleDirectory } from '@gateway/runtime';
import { runGateway } from '../../../test-support/cli.js';
import { postgresForThisFile } from '../../../test-support/postgres.js';
import { openPostgres } from '../src/store/postgres/database.js';
import { approvedSession, onFreshConnections, sharedKeysEnv, startCluster, waitForValue, workerPids } from './support/cluster.js';
import { prepareWorkspace, type Workspace } from './support/harness.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type WebhookReceiver } from './support/webhook-receiver.js';
import { PERSON } from './oauth-support/authorization-server.js';

const CALLS = 24;

const postgres = postgresForThisFile();
let workspace: Workspace;
let env: Record<string, string>;
let databaseUrl: string;
let audit: WebhookReceiver;

type Call = (name: string, args: Record<string, unknown>) => Promise<{ isError?: boolean; content?: unknown }>;

/** An SDK client of one era; concurrent calls open several connections, which the cluster hands to the workers in turn. */
async function connect(era: 'modern' | 'legacy', token: string): Promise<{ call: Call; close(): Promise<void> }> {
  const url = new URL(`http://127.0.0.1:${workspace.port}/mcp`);
  const requestInit = { headers: { authorization: `Bearer ${token}` } };
  if (era === 'modern') {
    const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit }));
    return { call: (name, args) => client.callTool({ name, arguments: args }) as never, close: () => client.close() };
  }
  const client = new LegacyClient({ name: 'v1-test', version: '1.0.0' });
  await client.connect(new LegacyTransport(url, { requestInit }));
  return { call: (name, args) => client.callTool({ name, arguments: args }) as never, close: () => client.close() };
}

beforeAll(async () => {
  databaseUrl = await postgres.server.createDatabase();
  audit = await startWebhookReceiver();
  workspace = await prepareWorkspace({
    configExtra: [
      'storage:\n  kind: postgres\n  url: database-url',
      'receipts:\n  checkpoint: { everyReceipts: 5, everySeconds: 3600 }',
      `webhooks:\n  audit:\n    url: ${audit.url}\n    secret: audit-webhook-secret`,
      'auth:\n  sessions:\n    lifetimeChoicesSeconds: [3600]',
    ].join('\n'),
    driftIntervalSeconds: 2,
  });
  env = {
    ...workspace.env,
    GATEWAY_SECRET_DATABASE_URL: databaseUrl,
    GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET: newWebhookSecret(),
    ...(await sharedKeysEnv()),
  };
  await new PeopleDirectory(join(workspace.directory, '.gateway', 'people.json')).add(PERSON.name, PERSON.password);
}, 120_000);

afterAll(async () => {
  await workspace?.cleanup();
  await audit?.close();
});

describe('gateway serve --workers on PostgreSQL', () => {
  it('two workers on one database serve a session approved through both to SDK clients of both eras; one verified log, events in order', {
    timeout: 120_000,
  }, async () => {
    const cluster = startCluster({ directory: workspace.directory, env, workers: 2 });
    try {
      await waitForValue(
        'the cluster to serve',
        () => cluster.stdout.includes('with 2 workers') || cluster.child.exitCode !== null,
        60_000,
      );
      expect(cluster.stdout, cluster.stderr).toContain('with 2 workers');
      const listening = await waitForValue('both workers to be reported', () => {
        const lines = cluster.lines.filter((line) => line.msg === 'worker listening');
        return lines.length === 2 ? lines : undefined;
      });
      const pids = listening.map((line) => line.pid as number);
      // Worker 1 migrated the database alone; worker 2 found nothing left to do.
      expect(
        cluster.lines.filter((line) => String(line.msg).startsWith('migrated the PostgreSQL database')).map((line) => line.worker),
      ).toEqual([1]);

      // Every step of sign-in, consent and the grant on a new connection: both workers take part.
      const { accessToken: token } = await onFreshConnections(() =>
        approvedSession(`http://127.0.0.1:${workspace.port}`, 'workers on postgres'),
      );
      const before = cluster.lines.length;
      const clients = await Promise.all(Array.from({ length: 8 }, (_, index) => connect(index % 2 === 0 ? 'modern' : 'legacy', token)));
      try {
        const results = await Promise.all(
          Array.from({ length: CALLS }, (_, index) =>
            clients[index % clients.length]!.call('get_order', { orderId: `ord_${1001 + (index % 3)}` }),
          ),
        );
        for (const result of results) expect(result.isError, JSON.stringify(result)).toBeFalsy();
      } finally {
        await Promise.all(clients.map((client) => client.close()));
      }
      const served = await waitForValue('both workers to log calls', () => {
        const seen = workerPids(cluster, before, (line) => line.msg === 'tool call' && line.outcome === 'ok');
        return seen.size === 2 ? seen : undefined;
      });
      expect([...served].sort()).toEqual([...pids].sort());

      // Durable before the answer, in the shared database: leaves 0…23, one head, no journal file on this host.
      const pool = openPostgres(databaseUrl, { max: 1 });
      try {
        const { rows } = await pool.query<{ leaf_index: number }>('SELECT leaf_index FROM receipts ORDER BY leaf_index');
        expect(rows.map((row) => row.leaf_index)).toEqual(Array.from({ length: CALLS }, (_, index) => index));
        const { rows: tree } = await pool.query<{ size: number }>('SELECT size FROM receipt_tree');
        expect(tree.map((row) => row.size)).toEqual([CALLS]);
      } finally {
        await pool.end();
      }
      const dataFiles = await readdir(join(workspace.directory, '.gateway'));
      expect(dataFiles.filter((name) => name.startsWith('receipts-journal-'))).toEqual([]);

      // One dispatcher for the endpoint across the workers (its lease): events 1…24, receipt n as event n + 1.
      const receiptEvents = () =>
        audit.requests
          .filter((request) => request.status === 204)
          .map((request) => JSON.parse(request.body) as { type: string; sequence: string; data: { receipt: string } })
          .filter((event) => event.type === 'io.service.call.receipted');
      await waitFor(() => receiptEvents().length >= CALLS, `${CALLS} receipt events at the receiver`);
      const events = receiptEvents();
      expect(events.map((event) => event.data.receipt)).toEqual(Array.from({ length: CALLS }, (_, index) => `receipt-${index}`));
      const sequences = events.map((event) => Number(event.sequence));
      expect(sequences).toEqual([...sequences].sort((a, b) => a - b));

      const verified = await runGateway(['receipts', 'verify'], { cwd: workspace.directory, env });
      expect(verified.exitCode, verified.stdout + verified.stderr).toBe(0);
      expect(verified.stdout).toContain('receipt log OK');

      // Drift is checked by the one worker that holds the storage's `drift-leader` lease (not by worker number).
      const leaders = workerPids(cluster, 0, (line) => String(line.msg).startsWith('drift: this process holds the drift-leader lease'));
      expect(leaders.size).toBe(1);
      const leasePool = openPostgres(databaseUrl, { max: 1 });
      try {
        const { rows } = await leasePool.query<{ holder: string }>("SELECT holder FROM leases WHERE name = 'drift-leader'");
        expect(rows.map((row) => row.holder.split('/')[1])).toEqual([String([...leaders][0])]);
      } finally {
        await leasePool.end();
      }

      cluster.child.kill('SIGTERM');
      expect(await cluster.exited).toBe(0);
    } finally {
      if (cluster.child.exitCode === null) cluster.child.kill('SIGKILL');
    }
  });

  it.each([
    ['GATEWAY_SECRET_REQUEST_STATE_KEY', 'REQUEST_STATE_KEY_NOT_SHARED'],
    ['GATEWAY_SECRET_OAUTH_SIGNING_KEYS', 'WORKERS_SIGNING_KEYS_NOT_SHARED'],
  ])(
    'one replica on PostgreSQL, without --workers, refuses to start when the read-only vault lacks %s (%s): ' +
      'the other replicas could not open what it issues',
    async (secret, code) => {
      // Exits at start-up; a replica that served instead is killed by the timeout and fails on its exit code.
      const run = await runGateway(['serve'], { cwd: workspace.directory, env: { ...env, [secret]: '' }, timeout: 60_000 });
      expect(run.exitCode, run.stdout + run.stderr).not.toBe(0);
      expect(run.exitCode, run.stdout + run.stderr).not.toBe(-1);
      expect(run.stdout + run.stderr).toContain(code);
    },
    90_000,
  );
});
