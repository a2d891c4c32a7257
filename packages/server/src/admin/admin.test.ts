import { join } from 'node:path';
import Database from 'better-sqlite3';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig, type LoadedConfig } from '@gateway/core';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { lockedOperation, lockWith } from '../../test/support/fixtures.js';
import { PublicationRegistry } from '../publications/registry.js';
import { createVault, type Vault } from '@gateway/runtime';
import type { DriftSourceReport } from '../drift/index.js';
import { secretsEqual } from '@gateway/runtime';
import { createOriginGuard } from '../mcp/origin.js';
import { authorizationMigrations } from '../authorization/index.js';
import { sqliteSessionStore } from '../authorization/stores/sqlite/index.js';
import { openDatabase } from '../store/sqlite/database.js';
import { createAdminPlugin } from './index.js';

/** The Host a client of this gateway (gateway.url http://127.0.0.1:8080) sends. */
const HOST = '127.0.0.1:8080';

let directory: { path: string; cleanup: () => Promise<void> };
let loaded: LoadedConfig;
let vault: Vault;
let registry: PublicationRegistry;
let app: FastifyInstance;
const driftReport: DriftSourceReport[] = [
  {
    source: 'orders',
    document: 'openapi.yaml',
    checkedAt: '2026-01-01T00:00:00.000Z',
    status: 'drifted',
    publication: 'publication-1',
    blockedTools: [{ tool: 'get_order', reason: 'operation removed from the live description' }],
    proposal: { digest: 'sha256:abc', detectedAt: '2026-01-01T00:00:00.000Z', changed: [], removed: ['get_order'], added: [] },
  },
];

beforeEach(async () => {
  directory = await temporaryDirectory('gateway-admin-');
  loaded = parseConfig('gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n', join(directory.path, 'gateway.yaml'));
  vault = await createVault(loaded, { env: {} });
  registry = new PublicationRegistry();
  registry.replace(
    lockWith([
      lockedOperation({ tool: 'get_order', method: 'GET', path: '/orders/{id}' }),
      lockedOperation({ tool: 'list_orders', method: 'GET', path: '/orders' }),
    ]),
  );
  registry.setBlocked('orders', new Map([['get_order', 'operation removed from the live description']]));
  app = Fastify({ logger: false });
  app.get('/elsewhere', async () => ({ ok: true }));
  const guard = createOriginGuard({ mcpUrl: 'http://127.0.0.1:8080/mcp', isLoopbackListener: true, listenPort: 8080 });
  await app.register(createAdminPlugin({ vault, loaded, registry, guard, drift: { report: () => driftReport } }));
});
afterEach(async () => {
  await app.close();
  await directory.cleanup();
});

describe('admin API', () => {
  it('without a configured token every admin request is 401 ADMIN_TOKEN_NOT_CONFIGURED as problem+json', async () => {
    const response = await app.inject({ url: '/admin/status', headers: { host: HOST, authorization: 'Bearer anything' } });
    expect(response.statusCode).toBe(401);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ status: 401, code: 'ADMIN_TOKEN_NOT_CONFIGURED' });
    expect(response.json().detail).toContain('gateway secrets set admin-token');
  });

  it('a missing or wrong token is refused; the right one reads the status', async () => {
    await vault.set('admin-token', 'correct-horse-battery');
    const missing = await app.inject({ url: '/admin/status', headers: { host: HOST } });
    expect(missing.statusCode).toBe(401);
    expect(missing.headers['www-authenticate']).toContain('Bearer');
    expect(missing.json().code).toBe('ADMIN_TOKEN_INVALID');
    const wrong = await app.inject({ url: '/admin/status', headers: { host: HOST, authorization: 'Bearer correct-horse-batterx' } });
    expect(wrong.statusCode).toBe(401);

    const right = await app.inject({ url: '/admin/status', headers: { host: HOST, authorization: 'bearer correct-horse-battery' } });
    expect(right.statusCode).toBe(200);
    expect(right.headers['cache-control']).toBe('no-store');
    expect(right.json()).toEqual({
      ready: true,
      publications: [{ source: 'orders', id: 'publication-1', toolCount: 2, blockedCount: 1 }],
      drift: driftReport,
    });
  });

  it('a body that is not JSON, too deep or too large is a 400/413 problem with its code, not a server error', async () => {
    await vault.set('admin-token', 'correct-horse-battery');
    const post = (payload: string) =>
      app.inject({
        method: 'POST',
        url: '/admin/drift/check',
        headers: { host: HOST, authorization: 'Bearer correct-horse-battery', 'content-type': 'application/json' },
        payload,
      });
    const malformed = await post('{"source": ');
    expect([malformed.statusCode, malformed.json().code]).toEqual([400, 'ADMIN_REQUEST_INVALID']);
    expect(malformed.headers['content-type']).toContain('application/problem+json');
    const deep = await post(`${'['.repeat(10_000)}${']'.repeat(10_000)}`);
    expect([deep.statusCode, deep.json().code]).toEqual([400, 'ADMIN_REQUEST_INVALID']);
    expect(deep.json().detail).toContain('nested');
    const large = await post(JSON.stringify({ source: 'x'.repeat(2_000_000) }));
    expect([large.statusCode, large.json().code]).toEqual([413, 'ADMIN_REQUEST_INVALID']);
  });

  it('a rotated admin token applies to the next request', async () => {
    await vault.set('admin-token', 'first-token');
    expect((await app.inject({ url: '/admin/status', headers: { host: HOST, authorization: 'Bearer first-token' } })).statusCode).toBe(200);
    await vault.set('admin-token', 'second-token');
    expect((await app.inject({ url: '/admin/status', headers: { host: HOST, authorization: 'Bearer first-token' } })).statusCode).toBe(401);
    expect((await app.inject({ url: '/admin/status', headers: { host: HOST, authorization: 'Bearer second-token' } })).statusCode).toBe(
      200,
    );
  });

  it('wrong tokens from one address are bounded: after 20 it waits (429 ADMIN_TOKEN_THROTTLED), other addresses do not', async () => {
    await vault.set('admin-token', 'a-short-token');
    const from = (remoteAddress: string, token: string) =>
      app.inject({ url: '/admin/status', remoteAddress, headers: { host: HOST, authorization: `Bearer ${token}` } });
    const statuses: number[] = [];
    for (let index = 0; index < 21; index += 1) statuses.push((await from('192.0.2.9', `guess-${index}`)).statusCode);
    expect(statuses.slice(0, 20).every((status) => status === 401)).toBe(true);
    expect(statuses[20]).toBe(429);
    // Even the right token waits at that address, so a guess that happens to be right cannot be told apart.
    const throttled = await from('192.0.2.9', 'a-short-token');
    expect([throttled.statusCode, throttled.json().code]).toEqual([429, 'ADMIN_TOKEN_THROTTLED']);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
    // Another address (an IPv6 client counts by its /64) is not held back, and right tokens count nothing.
    for (let index = 0; index < 25; index += 1) expect((await from('2001:db8::1', 'a-short-token')).statusCode).toBe(200);
  });

  it('a Host or Origin that does not name this gateway is refused before the token is looked at (DNS rebinding)', async () => {
    await vault.set('admin-token', 'correct-horse-battery');
    const authorization = 'Bearer correct-horse-battery';
    for (const host of ['evil.example', 'evil.example:8080', '127.0.0.1:9999', '127.0.0.1.evil.example:8080', '']) {
      const response = await app.inject({ url: '/admin/status', headers: { host, authorization } });
      expect(response.statusCode, host).toBe(403);
      expect(response.json(), host).toMatchObject({ status: 403, code: 'ADMIN_HOST_REFUSED' });
      expect(response.body, host).not.toContain('publication-1');
    }
    const crossOrigin = await app.inject({ url: '/admin/status', headers: { host: HOST, origin: 'http://evil.example', authorization } });
    expect(crossOrigin.statusCode).toBe(403);
    expect(crossOrigin.json().code).toBe('ADMIN_HOST_REFUSED');
    for (const host of [HOST, 'localhost:8080', '[::1]:8080']) {
      expect((await app.inject({ url: '/admin/status', headers: { host, authorization } })).statusCode, host).toBe(200);
    }
  });

  it('the admin hook does not touch other routes', async () => {
    expect((await app.inject({ url: '/elsewhere' })).json()).toEqual({ ok: true });
  });

  it('tokens are compared whole', () => {
    expect(secretsEqual('abc', 'abc')).toBe(true);
    expect(secretsEqual('abc', 'abcd')).toBe(false);
    expect(secretsEqual('', 'a')).toBe(false);
  });

  it('a revocation while another connection holds the database lock past the bound is 503 DATABASE_BUSY with Retry-After', async () => {
    await vault.set('admin-token', 'correct-horse-battery');
    const path = join(directory.path, 'gateway.db');
    const database = openDatabase(path, authorizationMigrations, { busyTimeoutMs: 200 });
    const sessions = sqliteSessionStore(database);
    const session = await sessions.sessions.open({
      subject: 'alice',
      personName: 'alice',
      clientId: 'client-1',
      clientName: 'Client',
      tools: [],
      logins: [],
      expiresAt: Date.now() + 60_000,
    });
    const busyApp = Fastify({ logger: false });
    const guard = createOriginGuard({ mcpUrl: 'http://127.0.0.1:8080/mcp', isLoopbackListener: true, listenPort: 8080 });
    await busyApp.register(createAdminPlugin({ vault, loaded, registry, guard, sessions }));
    const holder = new Database(path);
    holder.exec('BEGIN IMMEDIATE');
    try {
      const response = await busyApp.inject({
        method: 'POST',
        url: `/admin/sessions/${session.id}/revoke`,
        headers: { host: HOST, authorization: 'Bearer correct-horse-battery', 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(response.statusCode, response.body).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json()).toMatchObject({ status: 503, code: 'DATABASE_BUSY' });
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
      await busyApp.close();
      database.close();
    }
  });
});
