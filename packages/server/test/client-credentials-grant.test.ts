/**
 * One client credentials grant for the whole gateway: an OpenAPI source's `oauthClientCredentials` login and an
 * MCP HTTP source's `oauthClientCredentials` credential both obtain their token through the runtime's grant
 * (oauth4webapi), so a real token endpoint on loopback sees the same request from both, and both refuse what the
 * grant refuses (a token that is not a bearer token, a token endpoint the SSRF guard does not allow).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type LoadedConfig, type McpSourceConfig } from '@gateway/core';
import { connectMcpUpstream, createGuardedAgent, createVault, type Vault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../test-support/cli.js';
import { createCredentialResolver } from '../src/credentials/index.js';
import { lockedOperation } from './support/fixtures.js';
import { startFixtureMcpServer, type FixtureMcpServer } from './support/mcp-fixture-server.js';

const TOKEN = 'grant-token-9d1f';
/** A client secret whose Basic encoding differs between form-urlencoding (RFC 6749 §2.3.1) and percent-encoding. */
const CLIENT_SECRET = 'machine secret+/:';

interface TokenRequest {
  method: string | undefined;
  headers: Record<string, string | undefined>;
  body: string;
}

let tokenEndpoint: Server;
let tokenBase: string;
const tokenRequests: TokenRequest[] = [];
let mcp: FixtureMcpServer;
let directory: { path: string; cleanup: () => Promise<void> };
let loaded: LoadedConfig;
let vault: Vault;
const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });

async function readBody(incoming: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

beforeAll(async () => {
  tokenEndpoint = createServer(async (incoming, response) => {
    const { authorization, accept, 'content-type': contentType, 'user-agent': userAgent } = incoming.headers;
    tokenRequests.push({
      method: incoming.method,
      headers: { authorization, accept, contentType, userAgent },
      body: await readBody(incoming),
    });
    const tokenType = incoming.url === '/token-mac' ? 'mac' : 'Bearer';
    response
      .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
      .end(JSON.stringify({ access_token: TOKEN, token_type: tokenType, expires_in: 3600 }));
  });
  await new Promise<void>((resolve) => tokenEndpoint.listen(0, '127.0.0.1', resolve));
  tokenBase = `http://127.0.0.1:${(tokenEndpoint.address() as AddressInfo).port}`;
  mcp = await startFixtureMcpServer({ token: TOKEN });
  directory = await temporaryDirectory('gateway-grant-');
  const credential = (tokenUrl: string): string =>
    `{ type: oauthClientCredentials, clientId: 'machine client', secret: machine-secret, tokenUrl: '${tokenUrl}', scopes: [read] }`;
  loaded = parseConfig(
    `gateway:\n  url: http://127.0.0.1:8080\nnetwork:\n  allowPrivateNetworks: [127.0.0.1/32]\nsources:\n` +
      `  api:\n    kind: openapi\n    document: api.yaml\n    credentials:\n      machine: ${credential(`${tokenBase}/token`)}\n` +
      `  remote:\n    kind: mcp\n    url: ${mcp.url}\n    credentials: ${credential(`${tokenBase}/token`)}\n` +
      `  mac:\n    kind: mcp\n    url: ${mcp.url}\n    credentials: ${credential(`${tokenBase}/token-mac`)}\n` +
      // 127.0.0.2 is loopback, but not in allowPrivateNetworks: the guard refuses it before any request.
      `  guarded:\n    kind: mcp\n    url: ${mcp.url}\n` +
      `    credentials: ${credential(`${tokenBase.replace('127.0.0.1', '127.0.0.2')}/token`)}\n`,
    join(directory.path, 'gateway.yaml'),
  );
  vault = await createVault(loaded, { env: { PATH: process.env.PATH } });
  await vault.set('machine-secret', CLIENT_SECRET);
});

afterAll(async () => {
  tokenEndpoint.closeAllConnections();
  await new Promise<void>((resolve) => tokenEndpoint.close(() => resolve()));
  await mcp.close();
  await agent.close();
  await directory.cleanup();
});

function connect(sourceName: string) {
  return connectMcpUpstream({
    sourceName,
    source: loaded.config.sources[sourceName] as McpSourceConfig,
    baseDirectory: directory.path,
    vault,
    agent,
  });
}

describe('one client credentials grant', () => {
  it('an OpenAPI login and an MCP source ask the token endpoint the same way, through oauth4webapi', async () => {
    const resolver = createCredentialResolver({ loaded, vault, fetchDispatcher: agent });
    const operation = lockedOperation({
      tool: 'get_thing',
      method: 'GET',
      path: '/thing',
      security: [{ machine: ['read'] }],
      securitySchemes: { machine: { type: 'oauth2', flows: ['clientCredentials'], tokenUrl: `${tokenBase}/token` } },
    });
    const logins = new Set(['api/machine']);
    for (let call = 0; call < 2; call += 1) {
      const resolved = await resolver.resolve('api', operation, logins);
      expect(resolved.headers.authorization).toBe(`Bearer ${TOKEN}`);
    }
    // The second call used the cached token.
    expect(tokenRequests).toHaveLength(1);

    const connection = await connect('remote');
    try {
      // The fixture answers only with the token the grant obtained.
      expect((await connection.listAllTools()).map((tool) => tool.name)).toContain('stable');
      expect(mcp.requests.every((headers) => headers.authorization === `Bearer ${TOKEN}`)).toBe(true);
    } finally {
      await connection.close();
    }
    expect(tokenRequests).toHaveLength(2);

    const [openApi, mcpSource] = tokenRequests;
    expect(mcpSource).toEqual(openApi);
    expect(openApi!.method).toBe('POST');
    expect(openApi!.headers.userAgent).toMatch(/^oauth4webapi\//);
    expect(openApi!.headers.contentType).toMatch(/^application\/x-www-form-urlencoded/);
    // RFC 6749 §2.3.1: the client id and secret are form-urlencoded (space as '+') before Basic encoding.
    const basic = Buffer.from('machine+client:machine+secret%2B%2F%3A').toString('base64');
    expect(openApi!.headers.authorization).toBe(`Basic ${basic}`);
    expect(Object.fromEntries(new URLSearchParams(openApi!.body))).toEqual({ grant_type: 'client_credentials', scope: 'read' });
  }, 30_000);

  it('an MCP source refuses a token that is not a bearer token, as an OpenAPI login does', async () => {
    const error = await connect('mac').catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'OAUTH_TOKEN_REQUEST_FAILED' });
    expect(String((error as Error).message)).not.toContain(CLIENT_SECRET);
  }, 30_000);

  it("an MCP source's token endpoint goes through the SSRF guard", async () => {
    const before = tokenRequests.length;
    const error = await connect('guarded').catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'SSRF_ADDRESS_REFUSED' });
    expect(tokenRequests).toHaveLength(before);
  }, 30_000);
});
