import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { parseConfig, type LoadedConfig, type LockedOperation, type SecuritySchemeSummary } from '@gateway/core';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { createGuardedAgent } from '@gateway/runtime';
import { createVault, type Vault } from '@gateway/runtime';
import type { ExecutorCredentials } from '../execute/request.js';
import { createCredentialResolver, listLogins, operationLogins } from './index.js';

const schemes: Record<string, SecuritySchemeSummary> = {
  headerKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
  queryKey: { type: 'apiKey', in: 'query', name: 'api_key' },
  cookieKey: { type: 'apiKey', in: 'cookie', name: 'session_key' },
  bearerAuth: { type: 'http', scheme: 'bearer' },
  basicAuth: { type: 'http', scheme: 'basic' },
  machine: { type: 'oauth2', flows: ['clientCredentials'], tokenUrl: 'http://127.0.0.1:1/unused' },
  unconfigured: { type: 'http', scheme: 'bearer' },
};

function operation(security: LockedOperation['security']): LockedOperation {
  return {
    tool: 'get_thing',
    operationId: 'getThing',
    method: 'GET',
    path: '/thing',
    title: null,
    description: '',
    status: 'supported',
    reason: null,
    selected: true,
    server: null,
    parameters: [],
    body: null,
    security,
    securitySchemes: schemes,
    inputSchema: { type: 'object' },
    fingerprint: 'sha256:0',
  };
}

let echo: Server;
let echoUrl: string;
let tokenRequests: Array<{ authorization: string | undefined; body: string }> = [];
let tokenLifetime = 3600;
let directory: { path: string; cleanup: () => Promise<void> };
let loaded: LoadedConfig;
let vault: Vault;
const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
const allLogins = new Set(['api/headerKey', 'api/queryKey', 'api/cookieKey', 'api/bearerAuth', 'api/basicAuth', 'api/machine']);

async function readBody(incoming: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

beforeAll(async () => {
  echo = createServer(async (incoming, response) => {
    const body = await readBody(incoming);
    if (incoming.url === '/token') {
      tokenRequests.push({ authorization: incoming.headers.authorization, body });
      // RFC 6749 §2.3.1: client id and secret are form-urlencoded before Basic encoding.
      const decoded = Buffer.from((incoming.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString();
      const [clientId, clientSecret] = decoded.split(':').map((part) => decodeURIComponent(part.replace(/\+/g, ' ')));
      if (clientId !== 'machine-client' || clientSecret !== 'machine-secret') {
        response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
        return;
      }
      response
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(JSON.stringify({ access_token: `token-${tokenRequests.length}`, token_type: 'Bearer', expires_in: tokenLifetime }));
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: incoming.url, headers: incoming.headers }));
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
  directory = await temporaryDirectory('gateway-credentials-');
  loaded = parseConfig(
    `gateway:
  url: http://127.0.0.1:8080
sources:
  api:
    kind: openapi
    document: api.yaml
    credentials:
      headerKey: { type: apiKey, secret: header-key }
      queryKey: { type: apiKey, secret: query-key }
      cookieKey: { type: apiKey, secret: cookie-key }
      bearerAuth: { type: bearer, secret: bearer-token }
      basicAuth: { type: basic, username: alice, secret: alice-password }
      machine: { type: oauthClientCredentials, clientId: machine-client, secret: machine-secret, tokenUrl: '${echoUrl}/token', scopes: ` +
      `[read, write] }
      open: { type: none }
`,
    join(directory.path, 'gateway.yaml'),
  );
  vault = await createVault(loaded, { env: { PATH: process.env.PATH } });
  for (const [name, value] of Object.entries({
    'header-key': 'hk-value',
    'query-key': 'qk value&more',
    'cookie-key': 'ck-value',
    'bearer-token': 'bt-value',
    'alice-password': 'pa:ss',
    'machine-secret': 'machine-secret',
  })) {
    await vault.set(name, value);
  }
});

afterAll(async () => {
  await new Promise<void>((resolve) => echo.close(() => resolve()));
  await agent.close();
  await directory.cleanup();
});

/** Sends what the resolver produced to the echo server the way the executor would, and returns what arrived. */
async function sendThroughEcho(resolved: ExecutorCredentials): Promise<{ url: string; headers: Record<string, string> }> {
  const url = new URL(`${echoUrl}/thing`);
  for (const [name, value] of Object.entries(resolved.query)) url.searchParams.set(name, value);
  const headers: Record<string, string> = { ...resolved.headers };
  const cookies = Object.entries(resolved.cookies).map(([name, value]) => `${name}=${encodeURIComponent(value)}`);
  if (cookies.length) headers.cookie = cookies.join('; ');
  const response = await request(url, { headers, dispatcher: agent });
  return (await response.body.json()) as { url: string; headers: Record<string, string> };
}

describe('credential resolver', () => {
  it('an apiKey in a header, a query parameter and a cookie reaches the upstream as the scheme names it', async () => {
    const resolver = createCredentialResolver({ loaded, vault, fetchDispatcher: agent });
    const header = await resolver.resolve('api', operation([{ headerKey: [] }]), allLogins);
    expect(header.loginId).toBe('api/headerKey');
    expect((await sendThroughEcho(header)).headers['x-api-key']).toBe('hk-value');

    const query = await resolver.resolve('api', operation([{ queryKey: [] }]), allLogins);
    expect(new URL((await sendThroughEcho(query)).url, echoUrl).searchParams.get('api_key')).toBe('qk value&more');

    const cookie = await resolver.resolve('api', operation([{ cookieKey: [] }]), allLogins);
    expect((await sendThroughEcho(cookie)).headers.cookie).toBe('session_key=ck-value');
  });

  it('bearer and basic credentials become the Authorization header', async () => {
    const resolver = createCredentialResolver({ loaded, vault });
    const bearer = await sendThroughEcho(await resolver.resolve('api', operation([{ bearerAuth: [] }]), allLogins));
    expect(bearer.headers.authorization).toBe('Bearer bt-value');
    const basic = await sendThroughEcho(await resolver.resolve('api', operation([{ basicAuth: [] }]), allLogins));
    expect(basic.headers.authorization).toBe(`Basic ${Buffer.from('alice:pa:ss').toString('base64')}`);
  });

  it('no security, or an optional {} alternative, needs no login', async () => {
    const resolver = createCredentialResolver({ loaded, vault });
    expect(await resolver.resolve('api', operation([]), new Set())).toEqual({ headers: {}, query: {}, cookies: {}, loginId: null });
    expect((await resolver.resolve('api', operation([{ unconfigured: [] }, {}]), new Set())).loginId).toBeNull();
  });

  it('the first alternative the session may use is chosen', async () => {
    const resolver = createCredentialResolver({ loaded, vault });
    const resolved = await resolver.resolve(
      'api',
      operation([{ unconfigured: [] }, { bearerAuth: [] }, { headerKey: [] }]),
      new Set(['api/headerKey']),
    );
    expect(resolved.loginId).toBe('api/headerKey');
    expect(resolved.headers).toEqual({ 'x-api-key': 'hk-value' });
  });

  it('a configured login outside the session is refused with LOGIN_NOT_IN_SESSION', async () => {
    const resolver = createCredentialResolver({ loaded, vault });
    await expect(resolver.resolve('api', operation([{ bearerAuth: [] }]), new Set(['api/headerKey']))).rejects.toMatchObject({
      code: 'LOGIN_NOT_IN_SESSION',
      category: 'auth',
    });
  });

  it('a scheme with no configured credential is CREDENTIAL_NOT_AVAILABLE', async () => {
    const resolver = createCredentialResolver({ loaded, vault });
    await expect(resolver.resolve('api', operation([{ unconfigured: [] }]), allLogins)).rejects.toMatchObject({
      code: 'CREDENTIAL_NOT_AVAILABLE',
      category: 'auth',
    });
  });

  it('a rotated secret is used by the next call', async () => {
    const resolver = createCredentialResolver({ loaded, vault });
    await vault.set('bearer-token', 'rotated-value');
    try {
      expect((await resolver.resolve('api', operation([{ bearerAuth: [] }]), allLogins)).headers.authorization).toBe(
        'Bearer rotated-value',
      );
    } finally {
      await vault.set('bearer-token', 'bt-value');
    }
  });

  it('OAuth client credentials: the token is requested once and cached until shortly before expiry', async () => {
    tokenRequests = [];
    tokenLifetime = 3600;
    let clock = 1_000_000_000_000;
    const resolver = createCredentialResolver({ loaded, vault, fetchDispatcher: agent, now: () => clock });
    const first = await resolver.resolve('api', operation([{ machine: ['ignored'] }]), allLogins);
    expect(first.headers.authorization).toBe('Bearer token-1');
    expect(first.loginId).toBe('api/machine');
    const [second, third] = await Promise.all([
      resolver.resolve('api', operation([{ machine: [] }]), allLogins),
      resolver.resolve('api', operation([{ machine: [] }]), allLogins),
    ]);
    expect(second.headers.authorization).toBe('Bearer token-1');
    expect(third.headers.authorization).toBe('Bearer token-1');
    expect(tokenRequests).toHaveLength(1);
    expect(new URLSearchParams(tokenRequests[0]!.body).get('grant_type')).toBe('client_credentials');
    expect(new URLSearchParams(tokenRequests[0]!.body).get('scope')).toBe('read write');
    expect((await sendThroughEcho(first)).headers.authorization).toBe('Bearer token-1');

    clock += 3600_000 - 10_000; // inside the last 30 s of its life: a new token is fetched
    expect((await resolver.resolve('api', operation([{ machine: [] }]), allLogins)).headers.authorization).toBe('Bearer token-2');
    expect(tokenRequests).toHaveLength(2);
  });

  it('OAuth client credentials refused by the token endpoint is OAUTH_TOKEN_REQUEST_FAILED without the secret', async () => {
    await vault.set('machine-secret', 'wrong-secret');
    try {
      const resolver = createCredentialResolver({ loaded, vault, fetchDispatcher: agent });
      const error = await resolver.resolve('api', operation([{ machine: [] }]), allLogins).catch((caught: Error) => caught);
      expect(error).toMatchObject({ code: 'OAUTH_TOKEN_REQUEST_FAILED' });
      expect((error as Error).message).toContain('invalid_client');
      expect((error as Error).message).not.toContain('wrong-secret');
    } finally {
      await vault.set('machine-secret', 'machine-secret');
    }
  });

  it('a token endpoint on a private address is refused by the SSRF guard', async () => {
    const strict = createGuardedAgent({});
    const resolver = createCredentialResolver({ loaded, vault, fetchDispatcher: strict });
    await expect(resolver.resolve('api', operation([{ machine: [] }]), allLogins)).rejects.toMatchObject({ code: 'SSRF_ADDRESS_REFUSED' });
    await strict.close();
  });

  it('a missing secret names the secret and how to store it', async () => {
    await vault.delete('header-key');
    try {
      const resolver = createCredentialResolver({ loaded, vault });
      await expect(resolver.resolve('api', operation([{ headerKey: [] }]), allLogins)).rejects.toMatchObject({
        code: 'CREDENTIAL_SECRET_MISSING',
        message: expect.stringContaining('gateway secrets set header-key'),
      });
    } finally {
      await vault.set('header-key', 'hk-value');
    }
  });

  it('listLogins names every credential except type none; operationLogins the ones an operation may use', () => {
    expect(listLogins(loaded).map((login) => `${login.id}:${login.type}`)).toEqual([
      'api/basicAuth:basic',
      'api/bearerAuth:bearer',
      'api/cookieKey:apiKey',
      'api/headerKey:apiKey',
      'api/machine:oauthClientCredentials',
      'api/queryKey:apiKey',
    ]);
    expect(operationLogins(loaded, 'api', operation([{ bearerAuth: [] }, { headerKey: [], open: [] }, { unconfigured: [] }]))).toEqual([
      'api/bearerAuth',
      'api/headerKey',
    ]);
  });
});
