/**
 * The gateway on PostgreSQL (`storage: { kind: postgres, url: <vault name> }`): two replicas started on one fresh
 * database of a throw-away cluster (test-support/postgres.ts), tool calls from SDK clients of both eras sent to
 * both, and the one receipt log they share contiguous and verified by `gateway receipts verify`.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { runGateway } from '../../../test-support/cli.js';
import { postgresForThisFile } from '../../../test-support/postgres.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { openPostgres } from '../src/store/postgres/database.js';
import { sharedKeysEnv } from './support/cluster.js';
import { allowAll, prepareWorkspace, type Workspace } from './support/harness.js';
import { freePort } from './support/net.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type WebhookReceiver } from './support/webhook-receiver.js';

const postgres = postgresForThisFile();
let workspace: Workspace;
let databaseUrl: string;
let audit: WebhookReceiver;
/** Each replica and the address it listens on (the canonical URL is the first one's). */
const replicas: Array<{ gateway: RunningGateway; mcpUrl: string }> = [];

/** The first replica on the workspace's config; a later one on a copy with a data directory of its own (another host). */
async function startReplica(port?: number): Promise<RunningGateway> {
  let configPath = workspace.configPath;
  if (port) {
    configPath = join(workspace.directory, `gateway-${port}.yaml`);
    const config = await readFile(workspace.configPath, 'utf8');
    await writeFile(configPath, config.replace('gateway:\n', `gateway:\n  dataDirectory: .gateway-${port}\n`));
  }
  const gateway = await startGateway({
    configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 2_000,
    authorizerOverride: allowAll(new Set(['orders/api_key'])),
    // Replicas share the canonical URL (a load balancer's): it names the receipt log its checkpoints sign.
    ...(port ? { listen: `127.0.0.1:${port}` } : {}),
  });
  replicas.push({ gateway, mcpUrl: port ? `http://127.0.0.1:${port}/mcp` : gateway.mcpUrl });
  return gateway;
}

beforeAll(async () => {
  databaseUrl = await postgres.server.createDatabase();
  audit = await startWebhookReceiver();
  workspace = await prepareWorkspace({
    configExtra: [
      'storage:\n  kind: postgres\n  url: database-url',
      'receipts:\n  checkpoint: { everyReceipts: 5, everySeconds: 3600 }',
      `webhooks:\n  audit:\n    url: ${audit.url}\n    secret: audit-webhook-secret`,
    ].join('\n'),
  });
  workspace.env.GATEWAY_SECRET_DATABASE_URL = databaseUrl;
  workspace.env.GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET = newWebhookSecret();
  // The keys replicas share from the vault: tokens and retries' states one issues open on the other, and one replica
  // at a time signs checkpoints of the one log (the checkpoint-signer lease's holder) under the shared receipt key,
  // so a successor's checkpoints extend its predecessor's.
  Object.assign(workspace.env, await sharedKeysEnv());
  await startReplica();
  await startReplica(await freePort());
}, 120_000);

afterAll(async () => {
  for (const { gateway } of replicas.splice(0)) await gateway.close();
  await workspace?.cleanup();
  await audit?.close();
});

type Call = (name: string, args: Record<string, unknown>) => Promise<{ isError?: boolean }>;

async function connect(mcpUrl: string, era: 'modern' | 'legacy'): Promise<{ call: Call; close(): Promise<void> }> {
  const headers = { authorization: 'Bearer client-token' };
  if (era === 'modern') {
    const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers } }));
    return { call: (name, args) => client.callTool({ name, arguments: args }) as never, close: () => client.close() };
  }
  const client = new LegacyClient({ name: 'v1-test', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(mcpUrl), { requestInit: { headers } }));
  return { call: (name, args) => client.callTool({ name, arguments: args }) as never, close: () => client.close() };
}

describe('the gateway on PostgreSQL', () => {
  it('two replicas on one database answer tool calls of both eras, and their receipts form one verified log', async () => {
    const clients = await Promise.all(replicas.flatMap(({ mcpUrl }) => (['modern', 'legacy'] as const).map((era) => connect(mcpUrl, era))));
    try {
      const results = await Promise.all(
        Array.from({ length: 24 }, (_, index) =>
          clients[index % clients.length]!.call('get_order', { orderId: `ord_${1001 + (index % 3)}` }),
        ),
      );
      for (const result of results) expect(result.isError).toBeFalsy();
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
    // Durable before the answer (no per-host journal): every call's receipt is in the database now.
    const pool = openPostgres(databaseUrl, { max: 1 });
    try {
      const { rows } = await pool.query<{ leaf_index: number }>('SELECT leaf_index FROM receipts ORDER BY leaf_index');
      expect(rows.map((row) => row.leaf_index)).toEqual(Array.from({ length: 24 }, (_, index) => index));
      const { rows: tree } = await pool.query<{ size: number }>('SELECT size FROM receipt_tree');
      expect(tree[0]!.size).toBe(24);
    } finally {
      await pool.end();
    }
    // Both replicas read the same tree; the first started holds the signer's lease, the second signs nothing.
    const heads = await Promise.all(replicas.map(({ gateway }) => gateway.receipts!.store.head()));
    expect(heads[1]).toEqual(heads[0]);
    expect(replicas.map(({ gateway }) => gateway.receipts!.isCheckpointSigner())).toEqual([true, false]);
    const verified = await runGateway(['receipts', 'verify'], { cwd: workspace.directory, env: workspace.env });
    expect(verified.exitCode, String(verified.stdout) + String(verified.stderr)).toBe(0);
    expect(String(verified.stdout)).toContain('receipt log OK');
  });

  it("each receipt's event, written in its unit of work on whichever replica, is delivered once, in receipt order", async () => {
    const receiptEvents = () => audit.requests.filter((request) => request.status === 204).map((request) => JSON.parse(request.body));
    await waitFor(() => receiptEvents().length >= 24, '24 receipt events at the receiver');
    const events = receiptEvents() as Array<{ sequence: string; data: { receipt: string } }>;
    // One dispatcher per endpoint across replicas (the lease): sequences 1…24 arrive in order, receipt n as event n + 1.
    expect(events.map((event) => Number(event.sequence))).toEqual(Array.from({ length: 24 }, (_, index) => index + 1));
    expect(events.map((event) => event.data.receipt)).toEqual(Array.from({ length: 24 }, (_, index) => `receipt-${index}`));
  });
});
