import { readFile, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { runGateway } from '../../../test-support/cli.js';
import { HARNESS_ADMIN_TOKEN, startHarness, type Harness } from './support/harness.js';

async function until<T>(check: () => T | Promise<T>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the drift push trigger', () => {
  let harness: Harness;
  beforeAll(async () => {
    // An hour between rounds: only the push trigger can notice the change within this test.
    harness = await startHarness({ driftIntervalSeconds: 3600 });
    await until(() => harness.gateway.drift?.report().every((source) => source.checkedAt !== null), 'the first drift round');
  });
  afterAll(async () => {
    await harness?.stop();
  });

  const adminHeaders = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}`, 'content-type': 'application/json' };

  it('POST /admin/drift/check blocks a changed operation within one second, and only that one', async () => {
    const document = await readFile(harness.documentPath, 'utf8');
    const changed = document.replace("pattern: '^ord_[0-9]+$'", () => "pattern: '^order_[0-9]+$'");
    expect(changed).not.toBe(document);
    await writeFile(harness.documentPath, changed);

    const started = performance.now();
    const response = await fetch(`${harness.gateway.url}/admin/drift/check`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ source: 'orders' }),
    });
    const elapsedMs = performance.now() - started;
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { drift: Array<{ source: string; status: string; blockedTools: Array<{ tool: string }> }> };
    expect(answer.drift).toHaveLength(1);
    expect(answer.drift[0]!.status).toBe('drifted');
    // get_order and delete_order share the changed path parameter; search and create do not.
    expect(answer.drift[0]!.blockedTools.map((blocked) => blocked.tool).sort()).toEqual(['delete_order', 'get_order']);
    expect(elapsedMs).toBeLessThan(1_000);

    const client = new Client({ name: 'drift-push', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(harness.mcpUrl)));
    try {
      const refused = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } });
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.content)).toContain('changed in the live description');
      const unchanged = await client.callTool({ name: 'search_orders', arguments: {} });
      expect(unchanged.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    await writeFile(harness.documentPath, document);
  });

  it('`gateway drift check` runs the same check from the CLI; an unknown source is a usage error', async () => {
    const env = { GATEWAY_ADMIN_TOKEN: HARNESS_ADMIN_TOKEN };
    const result = await runGateway(['drift', 'check', 'orders', '--url', harness.gateway.url, '--json'], { cwd: harness.directory, env });
    expect(result.exitCode, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout) as { drift: Array<{ source: string; status: string; blockedTools: unknown[] }> };
    // The document was restored by the previous test: the check lifts the blocks at once.
    expect(answer.drift).toEqual([expect.objectContaining({ source: 'orders', status: 'in-sync', blockedTools: [] })]);

    const unknown = await runGateway(['drift', 'check', 'nope', '--url', harness.gateway.url], { cwd: harness.directory, env });
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('SOURCE_UNKNOWN');
  });
});
