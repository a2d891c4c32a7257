/**
 * A database another connection holds the write lock of (another worker, `gateway sessions revoke`, a backup):
 * the OAuth endpoints wait for it within the bound, then answer 503 with Retry-After in OAuth's error shape,
 * never 500; once the lock is gone the same request succeeds. /mcp answers a JSON-RPC error with 503, and any
 * other route problem+json (the admin API's answer is proven in src/admin/admin.test.ts).
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '@gateway/core';
import { temporaryDirectory } from '../../../test-support/cli.js';
import { buildApp } from '../src/app.js';
import { createExecutor, NO_CREDENTIALS } from '../src/execute/index.js';
import { PublicationRegistry } from '../src/publications/index.js';
import { openDatabase } from '../src/store/sqlite/database.js';
import { allowAllAuthorizer, lockedOperation, lockWith, mcpRequest } from './support/fixtures.js';
import {
  approve,
  pkce,
  registerClient,
  startAuthorizationServer,
  tokenRequest,
  type TestAuthorizationServer,
} from './oauth-support/authorization-server.js';

const REDIRECT = 'http://127.0.0.1:9/callback';
const BOUND_MS = 400;

let server: TestAuthorizationServer;

beforeAll(async () => {
  server = await startAuthorizationServer({ busyTimeoutMs: BOUND_MS });
}, 30_000);

afterAll(async () => {
  await server?.close();
});

/** A second connection to the same file holding the write lock (`BEGIN IMMEDIATE`) until released. */
function holdWriteLock(path = join(server.directory, '.gateway', 'gateway.db')): { release(): void } {
  const holder = new Database(path);
  holder.exec('BEGIN IMMEDIATE');
  return {
    release() {
      holder.exec('ROLLBACK');
      holder.close();
    },
  };
}

async function refreshToken(): Promise<{ clientId: string; refreshToken: string }> {
  const registered = await registerClient(server.issuer, {
    client_name: 'busy test',
    redirect_uris: [REDIRECT],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
  });
  const clientId = registered.body.client_id as string;
  const { verifier, challenge } = pkce();
  const location = await approve(server, { clientId, redirectUri: REDIRECT, challenge, method: 'S256' }, { tools: ['search_orders'] });
  const tokens = await tokenRequest(server.issuer, {
    grant_type: 'authorization_code',
    code: location.searchParams.get('code')!,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: REDIRECT,
  });
  expect(tokens.status).toBe(200);
  return { clientId, refreshToken: tokens.body.refresh_token as string };
}

function expectBusyAnswer(answer: { status: number; body: Record<string, unknown>; headers: Headers }): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(503);
  expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(answer.headers.get('cache-control')).toBe('no-store');
  expect(answer.body.error).toBe('temporarily_unavailable');
  expect(String(answer.body.error_description)).toContain('busy');
}

describe('a database locked by another connection past the wait bound', () => {
  it('the refresh_token grant waits within the bound, then answers 503 temporarily_unavailable with Retry-After', async () => {
    const { clientId, refreshToken: token } = await refreshToken();
    const lock = holdWriteLock();
    let answer: Awaited<ReturnType<typeof tokenRequest>>;
    const started = performance.now();
    try {
      answer = await tokenRequest(server.issuer, { grant_type: 'refresh_token', refresh_token: token, client_id: clientId });
    } finally {
      lock.release();
    }
    const waitedMs = performance.now() - started;
    expectBusyAnswer(answer);
    // It waited for the lock (a deferred transaction upgrading to a write fails at once, without waiting).
    expect(waitedMs).toBeGreaterThanOrEqual(BOUND_MS * 0.9);
    expect(waitedMs).toBeLessThan(BOUND_MS + 3_000);
    // Nothing was changed: the same refresh token works once the lock is gone.
    const retried = await tokenRequest(server.issuer, { grant_type: 'refresh_token', refresh_token: token, client_id: clientId });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
  }, 30_000);

  it('client registration answers 503 temporarily_unavailable with Retry-After too (one mapping for every OAuth endpoint)', async () => {
    const lock = holdWriteLock();
    let response: Response;
    try {
      response = await fetch(`${server.issuer}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'busy', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
      });
    } finally {
      lock.release();
    }
    expectBusyAnswer({ status: response.status, body: (await response.json()) as Record<string, unknown>, headers: response.headers });
  }, 30_000);
});

describe('/mcp and the other routes on a database locked past the bound', () => {
  let directory: Awaited<ReturnType<typeof temporaryDirectory>>;
  let app: FastifyInstance;
  let databasePath: string;
  const agent = new Agent();

  beforeAll(async () => {
    directory = await temporaryDirectory('gateway-busy-');
    databasePath = join(directory.path, 'gateway.db');
    const database = openDatabase(databasePath, [{ id: 'test-001', sql: 'CREATE TABLE seen (at INTEGER NOT NULL)' }], {
      busyTimeoutMs: BOUND_MS,
    });
    const record = database.prepare('INSERT INTO seen (at) VALUES (?)');
    const registry = new PublicationRegistry();
    registry.replace(lockWith([lockedOperation({ tool: 'list_orders', method: 'GET', path: '/orders', server: 'http://127.0.0.1:9' })]));
    const allowAll = allowAllAuthorizer(registry);
    const loaded = parseConfig('gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n', join(directory.path, 'gateway.yaml'));
    app = await buildApp({
      loaded,
      mcpUrl: 'http://127.0.0.1:8080/mcp',
      // An authorizer that writes to the database on every request, as a session's bookkeeping would.
      authorizer: {
        ...allowAll,
        async authenticate(request) {
          record.run(Date.now());
          return allowAll.authenticate(request);
        },
      },
      // A route of an area without an error handler of its own: the application's handler answers for it.
      authPlugin: async (instance) => {
        instance.post('/elsewhere', async () => {
          record.run(Date.now());
          return { ok: true };
        });
      },
      registry,
      executor: createExecutor({
        credentials: { resolve: async () => NO_CREDENTIALS },
        dispatcherFor: () => agent,
        limitsFor: () => ({ connectMs: 500, totalMs: 1000, maxResponseBytes: 10_000 }),
      }),
      logger: false,
      isLoopbackListener: true,
      listenPort: 8080,
    });
    app.addHook('onClose', async () => database.close());
  });

  afterAll(async () => {
    await app?.close();
    await agent.close();
    await directory?.cleanup();
  });

  it('/mcp answers HTTP 503 with Retry-After and a JSON-RPC error naming DATABASE_BUSY', async () => {
    const lock = holdWriteLock(databasePath);
    try {
      const sent = mcpRequest('2026-07-28', 'tools/list', {}, undefined);
      const response = await app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { ...sent.headers, host: '127.0.0.1:8080' },
        payload: sent.body,
      });
      expect(response.statusCode, response.body).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      const body = response.json();
      expect(body.jsonrpc).toBe('2.0');
      expect(body.error.code).toBe(-32000);
      expect(body.error.data).toEqual({ code: 'DATABASE_BUSY' });
    } finally {
      lock.release();
    }
    const sent = mcpRequest('2026-07-28', 'tools/list', {}, undefined);
    const after = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...sent.headers, host: '127.0.0.1:8080' },
      payload: sent.body,
    });
    expect(after.statusCode, after.body).toBe(200);
  });

  it('any other route answers 503 problem+json with Retry-After; other errors keep their own status', async () => {
    const lock = holdWriteLock(databasePath);
    try {
      const response = await app.inject({ method: 'POST', url: '/elsewhere' });
      expect(response.statusCode, response.body).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json()).toMatchObject({ status: 503, code: 'DATABASE_BUSY' });
    } finally {
      lock.release();
    }
    const malformed = await app.inject({
      method: 'POST',
      url: '/elsewhere',
      headers: { 'content-type': 'application/json' },
      payload: '{',
    });
    expect(malformed.statusCode).toBe(400);
  });
});
