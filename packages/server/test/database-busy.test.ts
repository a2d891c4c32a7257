/**
 * A database another connection holds the write lock of (another worker, `gateway sessions revoke`, a backup):
 * the OAuth endpoints wait for it within the bound, then answer 503 with Retry-After in OAuth's error shape,
 * never 500; once the lock is gone the same request succeeds.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approve, pkce, registerClient, startAuthorizationServer, tokenRequest, type TestAuthorizationServer } from './oauth-support/authorization-server.js';

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
function holdWriteLock(): { release(): void } {
  const holder = new Database(join(server.directory, '.gateway', 'gateway.db'));
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
