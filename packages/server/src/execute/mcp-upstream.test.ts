/**
 * The supervised upstream pool against the real `@modelcontextprotocol/server-everything` over stdio.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayError, parseConfig } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import { McpUpstreamPool } from './mcp-upstream.js';

const require = createRequire(import.meta.url);
const everything = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');
const TOKEN = 'upstream-env-secret-4242';

const logs: { message: string; object: Record<string, unknown> }[] = [];
const logger = {
  info: (object: object, message: string) => logs.push({ message, object: object as Record<string, unknown> }),
  warn: (object: object, message: string) => logs.push({ message, object: object as Record<string, unknown> }),
};

async function pool(totalMs = 8_000): Promise<McpUpstreamPool> {
  process.env.MCPTEST_SECRET_EVERYTHING_TOKEN = TOKEN;
  const loaded = parseConfig(
    'gateway:\n  url: http://127.0.0.1:8080\nvault:\n  provider: env\n  env: { prefix: MCPTEST_SECRET_ }\nsources:\n' +
      `  everything:\n    kind: mcp\n    command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(everything)}, stdio]\n` +
      `    env: { API_TOKEN: { secret: everything-token } }\n    timeouts: { totalMs: ${totalMs} }\n`,
    '/tmp/gateway.yaml',
  );
  return new McpUpstreamPool({ loaded, vault: await createVault(loaded), logger, backoff: { initialMs: 100, maxMs: 1_000 } });
}

let current: McpUpstreamPool | undefined;
afterEach(async () => {
  await current?.close();
  current = undefined;
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('MCP upstream pool (stdio, supervised)', () => {
  it('passes results through whole: text, structured content, an image and an error', async () => {
    current = await pool();
    const echo = await current.callTool('everything', 'echo', { message: 'hello' });
    expect(echo.content).toEqual([{ type: 'text', text: 'Echo: hello' }]);

    const weather = await current.callTool('everything', 'get-structured-content', { location: 'Chicago' });
    expect(weather.structuredContent).toMatchObject({ temperature: expect.any(Number), conditions: expect.any(String) });

    const image = await current.callTool('everything', 'get-tiny-image', {});
    expect(image.content).toContainEqual(expect.objectContaining({ type: 'image', mimeType: 'image/png', data: expect.any(String) }));

    const error = await current
      .callTool('everything', 'get-structured-content', { location: 'Atlantis' })
      .catch((caught: unknown) => caught);
    // Either the upstream's own isError result, passed through, or its protocol error as a clear gateway error.
    if (error instanceof GatewayError) expect(error.code).toBe('MCP_UPSTREAM_FAILED');
    else expect((error as { isError?: boolean }).isError).toBe(true);
  }, 60_000);

  it('a stdio server gets its env values from the vault, and its echo of them is redacted', async () => {
    current = await pool();
    const env = await current.callTool('everything', 'get-env', {});
    // get-env answers the process environment as JSON text: the variable is set, its value never comes back.
    const text = (env.content[0] as { text: string }).text;
    expect(JSON.parse(text)).toMatchObject({ API_TOKEN: '[redacted]' });
    expect(JSON.stringify(env)).not.toContain(TOKEN);
  }, 60_000);

  it('a server killed mid-call fails that call clearly and at once; the next call works after the restart', async () => {
    current = await pool(20_000);
    await current.callTool('everything', 'echo', { message: 'warm up' });
    const pid = current.pid('everything')!;
    expect(pid).toBeGreaterThan(0);
    const started = Date.now();
    const call = current
      .callTool('everything', 'trigger-long-running-operation', { duration: 15, steps: 3 })
      .catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 500));
    process.kill(pid, 'SIGKILL');
    const error = await call;
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).toBe('MCP_UPSTREAM_CRASHED');
    expect(Date.now() - started).toBeLessThan(20_000);

    const after = await current.callTool('everything', 'echo', { message: 'again' });
    expect(after.content).toEqual([{ type: 'text', text: 'Echo: again' }]);
    expect(current.pid('everything')).not.toBe(pid);
    expect(logs.some((entry) => entry.message === 'mcp upstream lost; restarting')).toBe(true);
  }, 90_000);

  it('a call longer than the source timeout fails with MCP_UPSTREAM_TIMEOUT within the timeout', async () => {
    current = await pool(2_000);
    await current.connection('everything'); // started first: the connect has its own timeout (connectMs)
    const started = Date.now();
    const error = await current
      .callTool('everything', 'trigger-long-running-operation', { duration: 10, steps: 2 })
      .catch((caught: unknown) => caught);
    expect((error as GatewayError).code).toBe('MCP_UPSTREAM_TIMEOUT');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_900);
    expect(Date.now() - started).toBeLessThan(6_000);
  }, 60_000);

  it('close stops the stdio server process', async () => {
    current = await pool();
    await current.callTool('everything', 'echo', { message: 'x' });
    const pid = current.pid('everything')!;
    expect(isAlive(pid)).toBe(true);
    await current.close();
    current = undefined;
    for (let waited = 0; waited < 5_000 && isAlive(pid); waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(isAlive(pid)).toBe(false);
  }, 60_000);

  it('stderr of the upstream reaches the log with vault secrets redacted', () => {
    // Checked on every log entry the tests above produced: the env secret never appears in any of them.
    expect(JSON.stringify(logs)).not.toContain(TOKEN);
  });
});
