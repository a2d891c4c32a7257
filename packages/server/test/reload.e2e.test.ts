import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startGateway } from '../src/gateway.js';
import { runGateway } from '../../../test-support/cli.js';
import { HARNESS_ADMIN_TOKEN, prepareWorkspace, startHarness, type Harness, type Workspace } from './support/harness.js';

async function until<T>(check: () => T | Promise<T>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function connect(mcpUrl: string): Promise<Client> {
  const client = new Client({ name: 'reload-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
  return client;
}

describe('hot reload of tools.lock', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness();
  });
  afterAll(async () => {
    await harness?.stop();
  });

  it('a newly published, signed lock is swapped in while the server runs', async () => {
    await harness.republish((document) => document.replace('summary: Search orders', 'summary: Find orders'));
    // `import` rewrites the lock too (a new proposal, same publication in use); wait for the publish.
    await until(() => harness.gateway.registry.snapshot().tools.get('search_orders')?.entry.title === 'Find orders', 'the reload');
    const client = await connect(harness.mcpUrl);
    const { tools } = await client.listTools();
    expect(tools.find((tool) => tool.name === 'search_orders')?.title).toBe('Find orders');
    expect(harness.logs.some((line) => line.includes('reloaded tools.lock'))).toBe(true);
    await client.close();
  });

  it('a tampered lock is refused, logged, and the last good publication keeps serving', async () => {
    const generation = harness.gateway.registry.snapshot().generation;
    const text = await readFile(harness.lockPath, 'utf8');
    // Point get_order somewhere else without re-signing: the signature no longer covers the content.
    const tampered = text.replace(
      'path: /orders/{orderId}\n            title: Get one order',
      'path: /admin/{orderId}\n            title: Get one order',
    );
    expect(tampered).not.toBe(text);
    await writeFile(harness.lockPath, tampered);
    await until(() => harness.logs.some((line) => line.includes('refused the new tools.lock')), 'the refusal in the log');
    expect(harness.logs.find((line) => line.includes('refused the new tools.lock'))).toContain('LOCK_VERIFICATION_FAILED');
    expect(harness.gateway.registry.snapshot().generation).toBe(generation);

    const client = await connect(harness.mcpUrl);
    const result = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } });
    expect(result.isError).toBeFalsy();
    expect(harness.api.requests.at(-1)).toMatchObject({ method: 'GET', path: '/orders/ord_1001' });
    await client.close();
    expect((await fetch(`${harness.gateway.url}/readyz`)).status).toBe(200);

    // The operator sees the refusal in `gateway status`, not only in the log.
    const status = await runGateway(['status', '--url', harness.gateway.url], {
      cwd: harness.directory,
      env: { GATEWAY_ADMIN_TOKEN: HARNESS_ADMIN_TOKEN },
    });
    expect(status.exitCode, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/tools\.lock: the change at \S+ was REFUSED; the last good lock keeps serving/);
    expect(status.stdout).toContain('LOCK_VERIFICATION_FAILED');
  });

  it('a request that took its snapshot before a swap finishes on the old snapshot', async () => {
    const before = harness.gateway.registry.snapshot();
    await harness.republish((document) => document.replace('summary: Get one order', 'summary: Read one order'));
    await until(() => harness.gateway.registry.snapshot().tools.get('get_order')?.entry.title === 'Read one order', 'the reload');
    expect(before.tools.get('get_order')?.entry.title).toBe('Get one order');
    expect(harness.gateway.registry.snapshot().tools.get('get_order')?.entry.title).toBe('Read one order');
  });
});

describe('start-up', () => {
  let workspace: Workspace;
  beforeAll(async () => {
    workspace = await prepareWorkspace();
  });
  afterAll(async () => {
    await workspace?.cleanup();
  });

  it('a lock that does not verify stops start-up with an error naming what failed', async () => {
    const good = await readFile(workspace.lockPath, 'utf8');
    await writeFile(workspace.lockPath, good.replace('minLength: 1', 'minLength: 0'));
    try {
      await expect(startGateway({ configPath: workspace.configPath, env: workspace.env, logger: silentLogger() })).rejects.toMatchObject({
        code: 'LOCK_VERIFICATION_FAILED',
        message: expect.stringContaining('tools.lock'),
      });
    } finally {
      await writeFile(workspace.lockPath, good);
    }
  });

  it('plain HTTP on a non-loopback address is refused', async () => {
    await expect(
      startGateway({ configPath: workspace.configPath, env: workspace.env, listen: '0.0.0.0:0', logger: silentLogger() }),
    ).rejects.toMatchObject({ code: 'LISTEN_INSECURE_REFUSED' });
  });

  it('with gateway.tls it serves HTTPS', async () => {
    const cert = join(workspace.directory, 'cert.pem');
    const key = join(workspace.directory, 'key.pem');
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'],
      {
        stdio: 'ignore',
      },
    );
    const configText = await readFile(workspace.configPath, 'utf8');
    const tlsConfig = join(workspace.directory, 'gateway-tls.yaml');
    await writeFile(
      tlsConfig,
      configText
        .replace(/url: http:\/\/127\.0\.0\.1:(\d+)/, 'url: https://127.0.0.1:$1')
        .replace('gateway:\n', 'gateway:\n  tls: { cert: cert.pem, key: key.pem }\n'),
    );
    const gateway = await startGateway({ configPath: tlsConfig, lockPath: workspace.lockPath, env: workspace.env, logger: silentLogger() });
    const insecure = new Agent({ connect: { rejectUnauthorized: false } });
    try {
      expect(gateway.mcpUrl).toMatch(/^https:/);
      const response = await request(`${gateway.url}/healthz`, { dispatcher: insecure });
      expect(response.statusCode).toBe(200);
      await response.body.text();
    } finally {
      await gateway.close();
      await insecure.close();
    }
  });
});

function silentLogger() {
  return pino({ level: 'silent' });
}
