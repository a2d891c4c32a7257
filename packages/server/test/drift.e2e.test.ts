/**
 * Drift end to end: a running gateway (the test harness's workspace, published by the real CLI), its
 * description edited on disk while it serves, MCP clients calling tools, and the real `gateway status`
 * binary reading the admin API.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { runGateway } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { allowAll, prepareWorkspace, type Workspace } from './support/harness.js';

const ADMIN_TOKEN = 'admin-token-for-drift-test-5b1e';
const INTERVAL_MS = 300;

let workspace: Workspace;
let gateway: RunningGateway;
let original: string;
let env: Record<string, string>;
const logs: string[] = [];

beforeAll(async () => {
  workspace = await prepareWorkspace();
  const config = await readFile(workspace.configPath, 'utf8');
  await writeFile(workspace.configPath, config.replace('drift:\n  enabled: false', `drift:\n  intervalSeconds: ${INTERVAL_MS / 1000}`));
  original = await readFile(workspace.documentPath, 'utf8');
  // The harness's vault is the env provider: the admin token is GATEWAY_SECRET_ADMIN_TOKEN.
  env = { ...workspace.env, GATEWAY_SECRET_ADMIN_TOKEN: ADMIN_TOKEN, PATH: process.env.PATH ?? '' };
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env,
    logger: pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) }),
    shutdownGraceMs: 2_000,
    authorizerOverride: allowAll(new Set(['orders/api_key'])),
  });
});

afterAll(async () => {
  await writeFile(workspace.documentPath, original).catch(() => undefined);
  await gateway?.close();
  await workspace?.cleanup();
});

async function connect(): Promise<Client> {
  const client = new Client({ name: 'drift-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }),
  );
  return client;
}

type ToolResult = { isError?: boolean; content: Array<{ type: string; text?: string }> };

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<{ ok: boolean; text: string }> {
  try {
    const result = (await client.callTool({ name, arguments: args })) as ToolResult;
    return { ok: !result.isError, text: result.content.map((block) => block.text ?? '').join('\n') };
  } catch (error) {
    return { ok: false, text: (error as Error).message };
  }
}

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return Date.now() - started;
}

async function status(json: boolean): Promise<{ exitCode: number | undefined; stdout: string; stderr: string }> {
  const result = await runGateway(['status', ...(json ? ['--json'] : [])], { cwd: workspace.directory, env });
  return { exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr) };
}

// getOrder gains a required query parameter: its request changes; the other operations do not.
function drifted(document: string): string {
  return document.replace(
    '      operationId: getOrder\n',
    '      operationId: getOrder\n      parameters:\n        - name: fields\n          in: query\n          required: true\n' +
      '          schema: { type: string }\n',
  );
}

describe('drift while serving', () => {
  it(
    'a changed operation is refused within one poll interval, others keep working, status shows the proposal, ' + 'restoring restores',
    async () => {
      const client = await connect();
      await until(async () => gateway.drift?.report()[0]?.status === 'in-sync', 10_000);
      expect((await call(client, 'get_order', { orderId: 'ord_1001' })).ok).toBe(true);

      await writeFile(workspace.documentPath, drifted(original));
      const elapsed = await until(async () => !(await call(client, 'get_order', { orderId: 'ord_1001' })).ok, 10_000);
      // One interval, plus the time one round of checks and this polling loop take on a busy 2-core machine.
      expect(elapsed).toBeLessThan(INTERVAL_MS + 1_500);

      const refused = await call(client, 'get_order', { orderId: 'ord_1001' });
      expect(refused.text).toContain('drift');
      expect(refused.text).toContain('operation changed in the live description');
      expect((await call(client, 'search_orders', { status: 'shipped' })).ok).toBe(true);
      const listed = (await client.listTools()).tools.map((tool) => tool.name);
      expect(listed).not.toContain('get_order');
      expect(listed).toContain('search_orders');

      const json = await status(true);
      expect(json.exitCode, json.stderr).toBe(0);
      const report = JSON.parse(json.stdout) as {
        ready: boolean;
        publications: Array<{ source: string; id: string; toolCount: number }>;
        drift: Array<{
          source: string;
          status: string;
          blockedTools: Array<{ tool: string; reason: string }>;
          proposal?: { changed: string[]; removed: string[] };
        }>;
      };
      expect(report.ready).toBe(true);
      expect(report.publications[0]).toMatchObject({ source: 'orders', toolCount: 4 });
      expect(report.drift[0]).toMatchObject({ source: 'orders', status: 'drifted', proposal: { changed: ['get_order'], removed: [] } });
      expect(report.drift[0]!.blockedTools.map((entry) => entry.tool)).toEqual(['get_order']);

      const human = await status(false);
      expect(human.stdout).toContain('orders: drifted');
      expect(human.stdout).toContain('blocked get_order: operation changed in the live description');
      expect(human.stdout).toMatch(/changed\s+get_order/);

      await writeFile(workspace.documentPath, original);
      await until(async () => (await call(client, 'get_order', { orderId: 'ord_1001' })).ok, 10_000);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('get_order');
      const restored = JSON.parse((await status(true)).stdout) as { drift: Array<{ status: string; proposal?: unknown }> };
      expect(restored.drift[0]).toMatchObject({ status: 'in-sync' });
      expect(restored.drift[0]!.proposal).toBeUndefined();
      await client.close();
    },
  );

  it('an invalid document changes nothing and is reported by gateway status', async () => {
    const client = await connect();
    await writeFile(workspace.documentPath, 'openapi: 3.1.0\ninfo: [broken');
    try {
      await until(async () => gateway.drift?.report()[0]?.status === 'error', 10_000);
      expect((await call(client, 'get_order', { orderId: 'ord_1001' })).ok).toBe(true);
      const human = await status(false);
      expect(human.stdout).toContain('last check failed');
    } finally {
      await writeFile(workspace.documentPath, original);
      await client.close();
    }
  });

  it('gateway status with a wrong admin token is refused with an auth exit code', async () => {
    const result = await runGateway(['status'], { cwd: workspace.directory, env: { ...env, GATEWAY_ADMIN_TOKEN: 'wrong' } });
    expect(result.exitCode).toBe(9);
    expect(String(result.stderr)).toContain('ADMIN_TOKEN_INVALID');
  });
});
