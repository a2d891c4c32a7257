import type { Server } from 'node:http';
import { createServer } from 'node:net';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthorizationCodeClient, type AuthorizationCodeClient } from './authorization-code.js';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let issuer: string;
let providerServer: Server;
let client: AuthorizationCodeClient;
const redirectUri = 'http://127.0.0.1:9/connect/callback';
const attempt = { redirectUri, state: 'state-1', nonce: 'nonce-1', codeVerifier: 'v'.repeat(64) };

beforeAll(async () => {
  const port = await freePort();
  issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [{ client_id: 'gateway', client_secret: 'secret', redirect_uris: [redirectUri], grant_types: ['authorization_code'] }],
  } as never);
  providerServer = provider.listen(port);
  client = createAuthorizationCodeClient(
    { issuer, clientId: 'gateway', scopes: ['openid', 'orders:read'], resource: 'https://api.example.com/' },
    { requester: 'orders/oauth', clientSecret: async () => 'secret' },
  );
});

afterAll(async () => {
  providerServer?.closeAllConnections();
  await new Promise((resolve) => providerServer?.close(resolve));
});

describe('the authorization code client of per-person logins', () => {
  it('finds the provider by discovery and asks with PKCE S256, state, nonce, scopes and the resource indicator', async () => {
    const url = new URL(await client.authorizationUrl(attempt));
    expect(`${url.origin}${url.pathname}`).toBe(`${issuer}/auth`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: 'gateway',
      redirect_uri: redirectUri,
      scope: 'openid orders:read',
      code_challenge_method: 'S256',
      state: 'state-1',
      nonce: 'nonce-1',
      resource: 'https://api.example.com/',
    });
    // RFC 7636 §4.2: BASE64URL(SHA256(verifier)), never the verifier itself.
    expect(url.searchParams.get('code_challenge')).not.toBe(attempt.codeVerifier);
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('refuses an answer naming another issuer, or none when the provider sends it (RFC 9207), before redeeming', async () => {
    const callback = (parameters: Record<string, string>) => new URL(`${redirectUri}?${new URLSearchParams(parameters).toString()}`);
    await expect(
      client.redeem({ ...attempt, callbackUrl: callback({ code: 'c', state: 'state-1', iss: 'http://127.0.0.1:1' }) }),
    ).rejects.toThrow(/unexpected "iss"/);
    await expect(client.redeem({ ...attempt, callbackUrl: callback({ code: 'c', state: 'state-1' }) })).rejects.toThrow(
      /"iss" \(issuer\) missing/,
    );
    await expect(client.redeem({ ...attempt, callbackUrl: callback({ code: 'c', state: 'another', iss: issuer }) })).rejects.toThrow(
      /state/,
    );
    await expect(
      client.redeem({ ...attempt, callbackUrl: callback({ error: 'access_denied', state: 'state-1', iss: issuer }) }),
    ).rejects.toThrow(/refused the authorization: access_denied/);
  });

  it('without an issuer, uses the configured endpoints', async () => {
    const direct = createAuthorizationCodeClient(
      { authorizationUrl: 'https://id.example.com/authorize', tokenUrl: 'https://id.example.com/token', clientId: 'gateway', scopes: [] },
      { requester: 'orders/oauth', clientSecret: async () => 'secret' },
    );
    const url = new URL(await direct.authorizationUrl(attempt));
    expect(`${url.origin}${url.pathname}`).toBe('https://id.example.com/authorize');
    expect(url.searchParams.has('scope')).toBe(false);
    expect(url.searchParams.has('nonce')).toBe(false);
  });
});
