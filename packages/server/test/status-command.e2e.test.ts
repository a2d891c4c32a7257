import { writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '@gateway/core';
import { createAdminPlugin } from '../src/admin/index.js';
import { createOriginGuard } from '../src/mcp/origin.js';
import { freePort } from './support/net.js';
import type { DriftSourceReport } from '../src/drift/index.js';
import { PublicationRegistry } from '../src/publications/registry.js';
import { createVault } from '@gateway/runtime';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';

const TOKEN = 'status-test-admin-token';
let directory: { path: string; cleanup: () => Promise<void> };
let app: FastifyInstance;
let url: string;
const env = { PATH: process.env.PATH ?? '' };

const drift: DriftSourceReport[] = [
  {
    source: 'orders',
    document: 'openapi.yaml',
    checkedAt: '2026-07-30T10:15:02.114Z',
    status: 'drifted',
    publication: 'publication-1',
    blockedTools: [{ tool: 'get_order', reason: 'operation removed from the live description' }],
    proposal: { digest: 'sha256:abc', detectedAt: '2026-07-30T10:15:02.120Z', changed: [], removed: ['get_order'], added: ['new_tool'] },
  },
  {
    source: 'billing',
    document: 'https://billing.example.com/openapi.json',
    checkedAt: '2026-07-30T10:15:03.000Z',
    status: 'error',
    error: { code: 'FETCH_TIMEOUT', message: 'no complete answer within 15000 ms' },
    publication: 'publication-2',
    blockedTools: [],
  },
];

beforeAll(async () => {
  directory = await temporaryDirectory('gateway-status-');
  const configPath = join(directory.path, 'gateway.yaml');
  await writeFile(configPath, 'gateway:\n  url: http://127.0.0.1:9\nsources: {}\n');
  const loaded = parseConfig('gateway:\n  url: http://127.0.0.1:9\nsources: {}\n', configPath);
  const vault = await createVault(loaded, { env });
  await vault.set('admin-token', TOKEN);
  const registry = new PublicationRegistry();
  registry.replace({
    lockVersion: 1,
    lastPublication: 1,
    sources: [
      {
        name: 'orders',
        kind: 'openapi',
        document: 'openapi.yaml',
        documentDigest: 'sha256:0',
        publications: [{ id: 'publication-1', status: 'in use', toolCount: 0, documentDigest: 'sha256:0', operations: [] }],
      },
    ],
  });
  app = Fastify({ logger: false });
  const port = await freePort();
  // As `gateway serve` builds it: the loopback listener's own port is a name of this gateway too.
  const guard = createOriginGuard({ mcpUrl: 'http://127.0.0.1:9/mcp', isLoopbackListener: true, listenPort: port });
  await app.register(createAdminPlugin({ vault, loaded, registry, guard, drift: { report: () => drift } }));
  await app.listen({ host: '127.0.0.1', port });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await app.close();
  await directory.cleanup();
});

describe('gateway status', () => {
  it('prints publications, blocked tools, the proposal and failed checks, with the token from the vault', async () => {
    const result = await runGateway(['status', '--url', url], { cwd: directory.path, env });
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const text = String(result.stdout);
    expect(text).toContain(`gateway ${url}: ready`);
    expect(text).toMatch(/orders\s+publication-1\s+0\s+0/);
    expect(text).toContain('orders: drifted, checked 2026-07-30T10:15:02.114Z (openapi.yaml)');
    expect(text).toContain('blocked get_order: operation removed from the live description');
    expect(text).toMatch(/removed get_order/);
    expect(text).toMatch(/added\s+new_tool/);
    expect(text).toContain('last check failed: FETCH_TIMEOUT');
  });

  it('--json prints the admin API answer', async () => {
    const result = await runGateway(['status', '--url', url, '--json'], {
      cwd: directory.path,
      env: { ...env, GATEWAY_ADMIN_TOKEN: TOKEN },
    });
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(String(result.stdout))).toEqual({
      ready: true,
      publications: [{ source: 'orders', id: 'publication-1', toolCount: 0, blockedCount: 0 }],
      drift,
    });
  });

  it('a wrong token is an auth error (exit 9) naming the admin code', async () => {
    const result = await runGateway(['status', '--url', url], { cwd: directory.path, env: { ...env, GATEWAY_ADMIN_TOKEN: 'wrong' } });
    expect(result.exitCode).toBe(9);
    expect(String(result.stderr)).toContain('ADMIN_TOKEN_INVALID');
  });

  it('no token anywhere is ADMIN_TOKEN_MISSING; an unreachable gateway is a network error (exit 8)', async () => {
    const empty = await temporaryDirectory('gateway-status-empty-');
    try {
      await writeFile(join(empty.path, 'gateway.yaml'), 'gateway:\n  url: http://127.0.0.1:9\nsources: {}\n');
      const missing = await runGateway(['status'], { cwd: empty.path, env });
      expect(missing.exitCode).toBe(9);
      expect(String(missing.stderr)).toContain('ADMIN_TOKEN_MISSING');
      const unreachable = await runGateway(['status'], { cwd: empty.path, env: { ...env, GATEWAY_ADMIN_TOKEN: TOKEN } });
      expect(unreachable.exitCode).toBe(8);
      expect(String(unreachable.stderr)).toContain('GATEWAY_UNREACHABLE');
      expect(String(unreachable.stderr)).not.toContain(TOKEN);
    } finally {
      await empty.cleanup();
    }
  });
});
