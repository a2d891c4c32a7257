/**
 * `gateway.trustedProxies`: behind a reverse proxy every connection comes from the proxy, so the per-address
 * limits would count all people together. A gateway that lists its proxy takes the client address from
 * X-Forwarded-For (walked from the right, the first hop that is not a listed proxy); one that does not ignores
 * the header, so a client cannot choose the address it is counted under.
 */
import { pino } from 'pino';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { runGateway } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { prepareWorkspace, type Workspace } from './support/harness.js';

const LIMIT = ['auth:', '  authorize:', '    perAddressPerMinute: 3'].join('\n');

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(
  gatewayExtra: string | undefined,
  options: { url?: string } = {},
): Promise<{ workspace: Workspace; gateway: RunningGateway; logs: Array<Record<string, unknown>> }> {
  const workspace = await prepareWorkspace({ configExtra: LIMIT, ...(gatewayExtra ? { gatewayExtra } : {}) });
  cleanups.push(() => workspace.cleanup());
  const logs: Array<Record<string, unknown>> = [];
  const gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) }),
    shutdownGraceMs: 1_000,
    ...(options.url ? { url: options.url } : {}),
  });
  cleanups.push(() => gateway.close());
  return { workspace, gateway, logs };
}

const PROXY_WARNING = /reached through a reverse proxy, which gateway.trustedProxies does not list/;

/** The status of one /authorize (an unknown client: the gateway's own 400 page until the address's bucket is empty). */
async function authorize(port: number, forwardedFor?: string): Promise<number> {
  const response = await request(`http://127.0.0.1:${port}/authorize?client_id=no-such-client`, {
    headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
  });
  await response.body.dump();
  return response.statusCode;
}

describe('gateway.trustedProxies', () => {
  it('with the proxy listed, each forwarded client has its own limit, counted under the address the proxy saw', async () => {
    const { workspace } = await serve('trustedProxies: [127.0.0.1/32]');
    const statuses = [];
    for (let index = 0; index < 4; index += 1) statuses.push(await authorize(workspace.port, '198.51.100.7'));
    expect(statuses).toEqual([400, 400, 400, 429]);
    // Another client behind the same proxy is not held back by the first.
    expect(await authorize(workspace.port, '198.51.100.8')).toBe(400);
    // A client that sends its own X-Forwarded-For gets the proxy's hop appended: it is counted under the
    // address the proxy saw (the rightmost untrusted hop), not under the one it wrote.
    expect(await authorize(workspace.port, '198.51.100.8, 198.51.100.7')).toBe(429);
    expect(await authorize(workspace.port, '198.51.100.7, 203.0.113.5')).toBe(400);
  }, 60_000);

  it('without it, X-Forwarded-For is ignored: every request counts for the connection address', async () => {
    const { workspace } = await serve(undefined);
    const statuses = [];
    for (const forwardedFor of ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4', '198.51.100.5']) {
      statuses.push(await authorize(workspace.port, forwardedFor));
    }
    expect(statuses).toEqual([400, 400, 400, 429, 429]);
  }, 60_000);

  it('a gateway listening on loopback for a public gateway.url warns at start-up until its proxy is listed', async () => {
    const behindProxy = await serve(undefined, { url: 'https://gateway.example.com' });
    const warning = behindProxy.logs.find((line) => PROXY_WARNING.test(String(line.msg)));
    expect(warning).toMatchObject({ level: 40, url: 'https://gateway.example.com' });
    const listed = await serve('trustedProxies: [127.0.0.1]', { url: 'https://gateway.example.com' });
    expect(listed.logs.some((line) => PROXY_WARNING.test(String(line.msg)))).toBe(false);
    // A loopback gateway.url is reached directly: nothing to warn about.
    const direct = await serve(undefined);
    expect(direct.logs.some((line) => PROXY_WARNING.test(String(line.msg)))).toBe(false);
  }, 90_000);

  it('an entry that is not an address or CIDR range stops `gateway serve` with NETWORK_ALLOWLIST_INVALID naming it', async () => {
    const workspace = await prepareWorkspace({ gatewayExtra: "trustedProxies: ['10.0.0.0/33']" });
    cleanups.push(() => workspace.cleanup());
    const run = await runGateway(['serve'], { cwd: workspace.directory, env: workspace.env, timeout: 30_000 });
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toContain('NETWORK_ALLOWLIST_INVALID');
    expect(run.stderr).toContain("gateway.trustedProxies: '10.0.0.0/33'");
  }, 60_000);
});
