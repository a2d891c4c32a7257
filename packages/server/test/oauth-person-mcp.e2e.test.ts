/**
 * OAuth per person for an MCP source whose server requires OAuth, with real parts only: oidc-provider on loopback
 * as the customer's authorization server, an MCP server (SDK v2, Streamable HTTP, both eras) on 127.0.0.1 that
 * checks every request's bearer token with jose against the provider's JWKS (audience: its own URL) and whose one
 * tool answers the token's `sub`, the gateway started from a gateway.yaml whose MCP source has an `oauthPerson`
 * credential (login `who/mcp`), people consenting in headless Chromium, and SDK clients of both MCP eras.
 *
 * The server also takes one static token, the gateway's own `listingCredentials`, for listing only: its tool
 * refuses that token, so a call the gateway made with its own credential would show.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { chromium, type Browser } from 'playwright-core';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, Server as McpServer, type AuthInfo, type CallToolResult } from '@modelcontextprotocol/server';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '@gateway/core';
import { createVault, PeopleDirectory, type Vault } from '@gateway/runtime';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { tokenSecretName } from '../src/credentials/person/token-vault.js';
import { freePort } from './support/net.js';
import { startPersonProvider, type RunningProvider } from './support/oidc-providers.js';
import {
  CHROMIUM_ARGS,
  ageStoredToken,
  consentInBrowser,
  modernClientOf,
  openConnectUrl,
  receiptsFrom,
  type ConsentingPerson,
} from './support/person-provider.js';

const PASSWORD = 'correct horse battery staple';
const CLIENT_SECRET = 'provider-client-secret-for-mcp-tests';
const LISTING_TOKEN = 'listing-token-of-the-gateway-itself';
const ADMIN_TOKEN = 'admin-token-for-mcp-person-logins';
const LOGIN = 'who/mcp';
const LABEL = 'Example ID';

let directory: { path: string; cleanup(): Promise<void> };
let provider: RunningProvider | undefined;
let providerIssuer: string;
let mcpServer: Server;
let mcpUrl: string;
let gateway: RunningGateway;
let gatewayUrl: string;
let vault: Vault;
let browser: Browser;
let refreshGrants = 0;
/** What the MCP server saw on each `tools/call`: the `sub` of the token it verified, or `listing` for the gateway's own. */
const callsSeen: string[] = [];

/** The customer's MCP server: every request needs a bearer token, a person's JWT for its URL or the listing token. */
async function startMcpServer(port: number): Promise<Server> {
  const keys = createRemoteJWKSet(new URL(`${providerIssuer}/jwks`));
  const factory = (context: { authInfo?: { clientId: string } }) => {
    const principal = context.authInfo?.clientId ?? 'nobody';
    const server = new McpServer({ name: 'who', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler('tools/list', async () => ({
      tools: [{ name: 'whoami', description: 'Who the access token is for.', inputSchema: { type: 'object', properties: {} } }],
    }));
    server.setRequestHandler('tools/call', async (): Promise<CallToolResult> => {
      callsSeen.push(principal);
      if (principal === 'listing') return { content: [{ type: 'text', text: 'the listing token cannot call tools' }], isError: true };
      return { content: [{ type: 'text', text: principal }], structuredContent: { sub: principal } };
    });
    return server;
  };
  const node = toNodeHandler(createMcpHandler(factory, { legacy: 'stateless' }));
  const server = createServer((request: IncomingMessage & { auth?: AuthInfo }, response) => {
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const refuse = () => {
      response
        .writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer error="invalid_token"' })
        .end('{"error":"unauthorized"}');
    };
    if (!token) return refuse();
    if (token === LISTING_TOKEN) {
      request.auth = { token, clientId: 'listing', scopes: [] };
      void node(request, response);
      return;
    }
    jwtVerify(token, keys, { issuer: providerIssuer, audience: mcpUrl }).then(({ payload }) => {
      request.auth = { token, clientId: String(payload.sub), scopes: [] };
      void node(request, response);
    }, refuse);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

async function cli(args: string[]): Promise<string> {
  const result = await runGateway(args, { cwd: directory.path, env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN } });
  if (result.exitCode !== 0)
    throw new Error(`gateway ${args.join(' ')} exited ${result.exitCode}:\n${String(result.stdout)}\n${String(result.stderr)}`);
  return String(result.stdout);
}

beforeAll(async () => {
  directory = await temporaryDirectory('gateway-oauth-person-mcp-');
  const [gatewayPort, providerPort, mcpPort] = [await freePort(), await freePort(), await freePort()];
  gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  providerIssuer = `http://127.0.0.1:${providerPort}`;
  mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
  provider = await startPersonProvider({
    port: providerPort,
    gatewayUrl,
    clientId: 'gateway',
    clientSecret: CLIENT_SECRET,
    resource: () => mcpUrl,
    scope: 'orders:read',
    onRefresh: () => {
      refreshGrants += 1;
    },
  });
  mcpServer = await startMcpServer(mcpPort);
  await writeFile(
    join(directory.path, 'gateway.yaml'),
    [
      'gateway:',
      `  url: ${gatewayUrl}`,
      `  listen: 127.0.0.1:${gatewayPort}`,
      'sources:',
      '  who:',
      '    kind: mcp',
      `    url: ${mcpUrl}`,
      // No `resource`: an MCP source's tokens are for its URL (RFC 8707), which the server checks as `aud`.
      `    credentials: { type: oauthPerson, issuer: '${providerIssuer}', clientId: gateway, secret: who-client-secret, ` +
        `scopes: [openid, offline_access, 'orders:read'], label: ${LABEL} }`,
      '    listingCredentials: { type: bearer, secret: who-listing-token }',
      'trust:',
      '  keys: [keys/publisher.pub.jwk]',
      'network:',
      '  allowPrivateNetworks: [127.0.0.1/32]',
      'drift:',
      '  enabled: false',
      '',
    ].join('\n'),
  );
  const loaded = await loadConfig(join(directory.path, 'gateway.yaml'));
  vault = await createVault(loaded, { env: {} });
  await vault.set('who-client-secret', CLIENT_SECRET);
  await vault.set('who-listing-token', LISTING_TOKEN);
  await vault.set('admin-token', ADMIN_TOKEN);
  await cli(['keys', 'generate', '--out', 'keys']);
  await cli(['import', 'who']);
  await cli(['review', 'who', '--all-supported', '--no-interactive']);
  await cli(['publish', 'who', '--key', join(directory.path, 'keys', 'publisher.private.jwk'), '--publisher', 'test@example.com']);
  const people = new PeopleDirectory(join(directory.path, '.gateway', 'people.json'));
  await people.add('alice', PASSWORD);
  await people.add('bob', PASSWORD);
  gateway = await startGateway({
    configPath: join(directory.path, 'gateway.yaml'),
    env: {},
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 1_000,
  });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await provider?.close();
  mcpServer?.closeAllConnections();
  await new Promise((resolve) => mcpServer?.close(resolve));
  await directory?.cleanup();
});

const consent = (name: string, connectAtConsent: boolean) =>
  consentInBrowser({
    browser,
    gatewayUrl,
    mcpUrl: gateway.mcpUrl,
    name,
    password: PASSWORD,
    tool: 'whoami',
    login: LOGIN,
    label: LABEL,
    connectAtConsent,
  });
const link = (person: ConsentingPerson, url: string) => openConnectUrl(person, url, { gatewayUrl, providerIssuer });

const subOf = (result: { structuredContent?: unknown }) => (result.structuredContent as { sub?: string } | undefined)?.sub;

/** An SDK v2 client (2026-07-28); with `onUrl` it declares URL elicitation and links through it. */
const modernClient = (person: ConsentingPerson, onUrl?: (url: string) => Promise<void>) => modernClientOf(gateway.mcpUrl, person, onUrl);
const receiptsSince = (size: number) => receiptsFrom(gateway.receipts!.store, size);
const ageToken = (person: string) => ageStoredToken(vault, `local:${person}`, LOGIN);

let alice: ConsentingPerson;
let bob: ConsentingPerson;

describe('OAuth per person for an MCP source', () => {
  it('alice links at consent, bob when his first call asks (2026-07-28); each call carries its own person token', async () => {
    // Listing (import) used the gateway's own listing token; no tool was called with it.
    expect(callsSeen).toEqual([]);
    alice = await consent('alice', true);
    bob = await consent('bob', false);
    const before = (await gateway.receipts!.store.head()).size;

    const aliceClient = await modernClient(alice);
    const elicited: string[] = [];
    const bobClient = await modernClient(bob, async (url) => {
      elicited.push(url);
      expect(await link(bob, url)).toBe(`Connected ${LABEL}`);
    });
    try {
      const first = await aliceClient.callTool({ name: 'whoami', arguments: {} });
      expect(first.isError).toBeFalsy();
      expect(subOf(first)).toBe('alice');
      const linked = await bobClient.callTool({ name: 'whoami', arguments: {} });
      expect(linked.isError).toBeFalsy();
      expect(subOf(linked)).toBe('bob');
      expect(elicited).toHaveLength(1);
      expect(elicited[0]).toMatch(new RegExp(`^${gatewayUrl}/connect\\?ticket=`));
      // Interleaved: each person's calls go over that person's own connection, with that person's token.
      const mixed = await Promise.all(
        Array.from({ length: 6 }, (_, index) => (index % 2 === 0 ? aliceClient : bobClient).callTool({ name: 'whoami', arguments: {} })),
      );
      expect(mixed.map(subOf)).toEqual(['alice', 'bob', 'alice', 'bob', 'alice', 'bob']);
    } finally {
      await aliceClient.close();
      await bobClient.close();
    }
    expect(callsSeen.slice(0, 2)).toEqual(['alice', 'bob']);
    expect(callsSeen).not.toContain('listing');

    const receipts = await receiptsSince(before);
    expect(receipts.slice(0, 3).map((receipt) => [receipt.person, receipt.outcome, receipt.reason, receipt.login])).toEqual([
      ['local:alice', 'allowed', null, `${LOGIN} sub=alice`],
      ['local:bob', 'action-required', 'PERSON_ACTION_REQUIRED', null],
      ['local:bob', 'allowed', null, `${LOGIN} sub=bob`],
    ]);
    expect(receipts).toHaveLength(9);
    for (const receipt of receipts.slice(3)) expect(receipt.login).toBe(`${LOGIN} sub=${String(receipt.person).slice('local:'.length)}`);
    const listed = JSON.parse(await cli(['logins', 'list', '--json'])) as { logins: Array<Record<string, unknown>> };
    expect(listed.logins.map((entry) => [entry.person, entry.login, entry.subject])).toEqual([
      ['local:alice', LOGIN, 'alice'],
      ['local:bob', LOGIN, 'bob'],
    ]);
    const database = await readFile(join(directory.path, '.gateway', 'gateway.db'));
    const token = JSON.parse((await vault.get(tokenSecretName('local:alice', LOGIN)))!) as { accessToken: string; refreshToken: string };
    expect(database.includes(Buffer.from(token.accessToken))).toBe(false);
    expect(database.includes(Buffer.from(token.refreshToken))).toBe(false);
  }, 90_000);

  it("after unlinking, alice's SDK 1.x call gets -32042 with the connect URL; after linking, the retry succeeds", async () => {
    expect(await cli(['logins', 'unlink', 'local:alice', LOGIN])).toContain(`unlinked ${LOGIN} of local:alice`);
    const client = new LegacyClient({ name: 'alice-v1', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    await client.connect(
      new LegacyTransport(new URL(gateway.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${alice.accessToken}` } } }),
    );
    const sent = callsSeen.length;
    try {
      const error = (await client.callTool({ name: 'whoami', arguments: {} }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      )) as { code: number; message: string; data: { elicitations: Array<{ mode: string; url: string }> } } | undefined;
      expect(error?.code).toBe(-32042);
      const url = error!.data.elicitations[0]!.url;
      expect(url).toMatch(new RegExp(`^${gatewayUrl}/connect\\?ticket=`));
      expect(callsSeen.length).toBe(sent);
      expect(await link(bob, url)).toBe('This link is for someone else');
      expect(await link(alice, url)).toBe(`Connected ${LABEL}`);
      const result = await client.callTool({ name: 'whoami', arguments: {} });
      expect(result.isError).toBeFalsy();
      expect(subOf(result as { structuredContent?: unknown })).toBe('alice');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('a token about to expire is refreshed before the call; a revoked grant unlinks, and that very call asks to link', async () => {
    await ageToken('alice');
    const refreshesBefore = refreshGrants;
    const aliceClient = await modernClient(alice);
    try {
      const results = await Promise.all(Array.from({ length: 3 }, () => aliceClient.callTool({ name: 'whoami', arguments: {} })));
      expect(results.map(subOf)).toEqual(['alice', 'alice', 'alice']);
    } finally {
      await aliceClient.close();
    }
    expect(refreshGrants - refreshesBefore).toBe(1);

    const stored = JSON.parse((await vault.get(tokenSecretName('local:bob', LOGIN)))!) as { refreshToken: string };
    const revoked = await fetch(`${providerIssuer}/token/revocation`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`gateway:${CLIENT_SECRET}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token: stored.refreshToken, token_type_hint: 'refresh_token' }).toString(),
    });
    expect(revoked.status).toBe(200);
    await ageToken('bob');
    const bobClient = await modernClient(bob);
    try {
      const before = (await gateway.receipts!.store.head()).size;
      const sent = callsSeen.length;
      // The decision finds the revoked grant while making the token usable: the link goes, and the call asks to link.
      const asked = await bobClient.callTool({ name: 'whoami', arguments: {} }).then(
        () => undefined,
        (thrown: unknown) => thrown as { code: number },
      );
      expect(asked?.code).toBe(-32042);
      expect(callsSeen.length).toBe(sent);
      expect(await vault.get(tokenSecretName('local:bob', LOGIN))).toBeUndefined();
      expect((await receiptsSince(before)).map((receipt) => [receipt.person, receipt.outcome, receipt.reason])).toEqual([
        ['local:bob', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ]);
    } finally {
      await bobClient.close();
    }
  }, 60_000);
});
