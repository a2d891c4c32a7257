/**
 * The canary: a secret stored in the file vault with `gateway secrets set` is used for upstream calls and
 * appears nowhere else — not in any file of the workspace (database, WAL, vault file, lock, config), not in
 * the logs, not in any MCP or admin response.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { runGateway } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { REDACTED_LOG_PATHS } from '../src/logger.js';
import { ORDERS_API_KEY, allowAll, prepareWorkspace, type Workspace } from './support/harness.js';

// The example API accepts exactly this key; here it lives only in the encrypted file vault.
const CANARY = ORDERS_API_KEY;
const ADMIN_TOKEN = 'admin-canary-check-token-91d2';

let workspace: Workspace;
let gateway: RunningGateway;
const logs: string[] = [];
const responses: string[] = [];
const env = { PATH: process.env.PATH ?? '' };

async function filesUnder(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

beforeAll(async () => {
  workspace = await prepareWorkspace();
  const config = await readFile(workspace.configPath, 'utf8');
  await writeFile(
    workspace.configPath,
    config
      .replace('vault:\n  provider: env', 'vault:\n  provider: file')
      .replace('drift:\n  enabled: false', 'drift:\n  intervalSeconds: 0.2'),
  );
  for (const [name, value] of [
    ['orders-api-key', CANARY],
    ['admin-token', ADMIN_TOKEN],
  ] as const) {
    const stored = await runGateway(['secrets', 'set', name], { cwd: workspace.directory, env, input: `${value}\n` });
    expect(stored.exitCode, String(stored.stderr)).toBe(0);
    responses.push(String(stored.stdout), String(stored.stderr));
  }
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env, // no GATEWAY_SECRET_* here: the key can only come from the file vault
    logger: pino(
      { level: 'trace', redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } },
      { write: (line: string) => void logs.push(line) },
    ),
    shutdownGraceMs: 2_000,
    authorizerOverride: allowAll(new Set(['orders/api_key'])),
  });
});

afterAll(async () => {
  await gateway?.close();
  await workspace?.cleanup();
});

describe('canary secret', () => {
  it('is sent to the upstream and appears in no file, log line or response', async () => {
    const client = new Client({ name: 'canary', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }),
    );
    const calls: Array<[string, Record<string, unknown>]> = [
      ['search_orders', { status: 'shipped' }],
      ['get_order', { orderId: 'ord_1001' }],
      ['get_order', { orderId: 'ord_9999' }], // upstream 404: an error result with a body excerpt
      ['create_order', { body: { nonsense: true } }], // invalid arguments
      ['delete_order', { orderId: 'ord_1002' }],
    ];
    for (const [name, args] of calls) {
      try {
        responses.push(JSON.stringify(await client.callTool({ name, arguments: args })));
      } catch (error) {
        responses.push(String((error as Error).message));
      }
    }
    responses.push(JSON.stringify(await client.listTools()));
    await client.close();

    const upstream = workspace.api.requests.filter((request) => request.headers['x-api-key'] !== undefined);
    expect(upstream.length).toBeGreaterThan(0);
    expect(upstream.every((request) => request.headers['x-api-key'] === CANARY)).toBe(true);

    const adminStatus = await fetch(`${gateway.url}/admin/status`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    responses.push(await adminStatus.text());
    const status = await runGateway(['status', '--json'], { cwd: workspace.directory, env });
    responses.push(String(status.stdout), String(status.stderr));
    const list = await runGateway(['secrets', 'list', '--json'], { cwd: workspace.directory, env });
    responses.push(String(list.stdout), String(list.stderr));
    await new Promise((resolve) => setTimeout(resolve, 500)); // let a drift round or two write the database

    const encodings = [CANARY, Buffer.from(CANARY).toString('base64'), Buffer.from(CANARY).toString('hex')];
    for (const text of responses) for (const encoded of encodings) expect(text).not.toContain(encoded);
    for (const line of logs) for (const encoded of encodings) expect(line).not.toContain(encoded);
    expect(logs.length).toBeGreaterThan(0);

    await gateway.close();
    const files = await filesUnder(workspace.directory);
    expect(files.some((file) => file.endsWith('gateway.db'))).toBe(true);
    expect(files.some((file) => file.endsWith('vault.json'))).toBe(true);
    for (const file of files) {
      const bytes = await readFile(file);
      for (const encoded of encodings) expect(bytes.includes(Buffer.from(encoded)), `${file} contains the canary`).toBe(false);
    }
  });
});
