/**
 * OAuth per person end to end, with real parts only: oidc-provider on loopback as the customer's authorization
 * server (JWT access tokens for the API's resource indicator, refresh tokens, revocation), an upstream API on
 * 127.0.0.1 that validates each bearer token with jose against the provider's JWKS and answers with its `sub`,
 * the gateway started from a gateway.yaml with an `oauthPerson` login and a file vault, people signing in and
 * consenting in headless Chromium, and SDK clients of both MCP eras calling.
 *
 * alice links at consent ("Connect" beside the tool, in another tab); bob links when his first call needs it
 * (2026-07-28: `input_required` + URL elicitation, his elicitation handler opens the URL in his browser). Each
 * call returns the caller's own `sub`. Then: unlinking through `gateway logins unlink`, alice's SDK 1.x client
 * (2025-11-25) gets -32042, bob cannot use alice's connect URL, alice can (signing in on the connect page in a
 * browser without a gateway session) once and only once; a token about to
 * expire is refreshed once for five concurrent calls; a grant revoked at the provider removes the link and the
 * next call asks for linking again.
 */
import { createServer, type Server } from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import Provider from 'oidc-provider';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '@gateway/core';
import { createVault, PeopleDirectory, type Vault } from '@gateway/runtime';
import { repositoryRoot, runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { tokenSecretName } from '../src/credentials/person/token-vault.js';
import { freePort } from './support/net.js';

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const REDIRECT = 'http://127.0.0.1:9/callback';
const PASSWORD = 'correct horse battery staple';
const CLIENT_SECRET = 'provider-client-secret-for-tests';
const ADMIN_TOKEN = 'admin-token-for-person-logins';
const LOGIN = 'who/oauth';
const OPERATOR = 'olga';
/** The console's Logins screenshots go to docs/ with GATEWAY_UPDATE_SCREENSHOTS=1 (as console.e2e.test.ts's do). */
const SCREENSHOT_DIRECTORY = process.env.GATEWAY_UPDATE_SCREENSHOTS === '1' ? join(repositoryRoot, 'docs') : tmpdir();

let directory: { path: string; cleanup(): Promise<void> };
let providerServer: Server;
let providerIssuer: string;
let api: Server;
let apiUrl: string;
let gateway: RunningGateway;
let gatewayUrl: string;
let vault: Vault;
let browser: Browser;
let refreshGrants = 0;
/** Authorization headers the upstream API saw, with the `sub` it verified. */
const seenByApi: Array<{ sub: string }> = [];

function startProvider(port: number): Server {
  const provider = new Provider(providerIssuer, {
    clients: [
      {
        client_id: 'gateway',
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${gatewayUrl}/connect/callback`],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'] },
    scopes: ['openid', 'offline_access', 'orders:read'],
    async findAccount(_context: unknown, id: string) {
      return {
        accountId: id,
        async claims() {
          return { sub: id };
        },
      };
    },
    issueRefreshToken: async (_context: unknown, client: { grantTypeAllowed(type: string): boolean }) =>
      client.grantTypeAllowed('refresh_token'),
    features: {
      devInteractions: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => apiUrl,
        useGrantedResource: () => true,
        getResourceServerInfo: (_context: unknown, resource: string) => ({
          scope: 'orders:read',
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 600,
        }),
      },
    },
  } as never);
  provider.on('grant.success', (context: { oidc: { params?: { grant_type?: string } } }) => {
    if (context.oidc.params?.grant_type === 'refresh_token') refreshGrants += 1;
  });
  return provider.listen(port);
}

/** The customer's API: answers with the `sub` of a JWT access token it verified against the provider's keys. */
async function startApi(port: number): Promise<Server> {
  const keys = createRemoteJWKSet(new URL(`${providerIssuer}/jwks`));
  const server = createServer((request, response) => {
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const refuse = () => {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
    };
    if (!token || request.url !== '/whoami') return refuse();
    jwtVerify(token, keys, { issuer: providerIssuer, audience: apiUrl }).then(({ payload }) => {
      seenByApi.push({ sub: String(payload.sub) });
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sub: payload.sub }));
    }, refuse);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

const openApiDocument = (providerPort: number, apiPort: number) => `openapi: 3.1.0
info: { title: Who, version: 1.0.0 }
servers: [{ url: 'http://127.0.0.1:${apiPort}' }]
components:
  securitySchemes:
    oauth:
      type: oauth2
      flows:
        authorizationCode:
          authorizationUrl: http://127.0.0.1:${providerPort}/auth
          tokenUrl: http://127.0.0.1:${providerPort}/token
          scopes: { 'orders:read': read orders }
security: [{ oauth: ['orders:read'] }]
paths:
  /whoami:
    get:
      operationId: whoami
      summary: Who the token is for
      responses:
        '200': { description: ok, content: { application/json: { schema: { type: object } } } }
`;

async function cli(args: string[]): Promise<string> {
  const result = await runGateway(args, { cwd: directory.path, env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN } });
  if (result.exitCode !== 0)
    throw new Error(`gateway ${args.join(' ')} exited ${result.exitCode}:\n${String(result.stdout)}\n${String(result.stderr)}`);
  return String(result.stdout);
}

beforeAll(async () => {
  directory = await temporaryDirectory('gateway-oauth-person-');
  const [gatewayPort, providerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  providerIssuer = `http://127.0.0.1:${providerPort}`;
  apiUrl = `http://127.0.0.1:${apiPort}/`;
  providerServer = startProvider(providerPort);
  api = await startApi(apiPort);
  await writeFile(join(directory.path, 'openapi.yaml'), openApiDocument(providerPort, apiPort));
  await writeFile(
    join(directory.path, 'gateway.yaml'),
    [
      'gateway:',
      `  url: ${gatewayUrl}`,
      `  listen: 127.0.0.1:${gatewayPort}`,
      'sources:',
      '  who:',
      '    kind: openapi',
      '    document: openapi.yaml',
      '    credentials:',
      `      oauth: { type: oauthPerson, issuer: '${providerIssuer}', clientId: gateway, secret: who-client-secret, ` +
        `scopes: [openid, offline_access, 'orders:read'], resource: '${apiUrl}', label: Example ID }`,
      'trust:',
      '  keys: [keys/publisher.pub.jwk]',
      'network:',
      '  allowPrivateNetworks: [127.0.0.1/32]',
      'drift:',
      '  enabled: false',
      '',
    ].join('\n'),
  );
  await cli(['keys', 'generate', '--out', 'keys']);
  await cli(['import', 'who']);
  await cli(['review', 'who', '--all-supported', '--no-interactive']);
  await cli(['publish', 'who', '--key', join(directory.path, 'keys', 'publisher.private.jwk'), '--publisher', 'test@example.com']);
  const loaded = await loadConfig(join(directory.path, 'gateway.yaml'));
  vault = await createVault(loaded, { env: {} });
  await vault.set('who-client-secret', CLIENT_SECRET);
  await vault.set('admin-token', ADMIN_TOKEN);
  const people = new PeopleDirectory(join(directory.path, '.gateway', 'people.json'));
  await people.add('alice', PASSWORD);
  await people.add('bob', PASSWORD);
  await people.add(OPERATOR, PASSWORD, { roles: ['operator'] });
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
  providerServer?.closeAllConnections();
  await new Promise((resolve) => providerServer?.close(resolve));
  api?.closeAllConnections();
  await new Promise((resolve) => api?.close(resolve));
  await directory?.cleanup();
});

/** oidc-provider's development sign-in and consent screens, as `account`, until the page is back at the gateway. */
async function passProvider(page: Page, account: string): Promise<void> {
  for (let step = 0; step < 6 && !page.url().startsWith(gatewayUrl); step += 1) {
    if (await page.locator('input[name="login"]').count()) {
      await page.fill('input[name="login"]', account);
      await page.fill('input[name="password"]', 'anything');
    }
    const current = page.url();
    await Promise.all([page.waitForURL((url) => url.href !== current, { timeout: 10_000 }), page.click('button[type="submit"]')]);
    await page.waitForLoadState();
  }
  expect(page.url().startsWith(`${gatewayUrl}/connect/callback`)).toBe(true);
}

interface Person {
  name: string;
  context: BrowserContext;
  accessToken: string;
}

/**
 * The person signs in at the gateway and consents to `whoami` for a new client; `connectAtConsent` first
 * clicks "Connect Example ID" beside the tool and links in the tab it opens.
 */
async function consent(name: string, connectAtConsent: boolean): Promise<Person> {
  const registered = (await (
    await fetch(`${gatewayUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: `${name}'s editor`, redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
    })
  ).json()) as { client_id: string };
  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL(`${gatewayUrl}/authorize`);
  for (const [key, value] of Object.entries({
    response_type: 'code',
    client_id: registered.client_id,
    redirect_uri: REDIRECT,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    resource: gateway.mcpUrl,
    state: 'state-1',
  }))
    authorize.searchParams.set(key, value);
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(authorize.href);
  await page.fill('input[name="name"]', name);
  await page.fill('input[name="password"]', PASSWORD);
  await Promise.all([page.waitForURL((url) => url.href.includes('/consent')), page.click('button[type="submit"]')]);
  const connect = page.locator('a.connect', { hasText: 'Connect Example ID' });
  expect(await connect.count()).toBe(1);
  await page.check('input[name="tool"][value="whoami"]');
  if (connectAtConsent) {
    const [tab] = await Promise.all([context.waitForEvent('page'), connect.click()]);
    await tab.waitForLoadState();
    await passProvider(tab, name);
    expect(await tab.locator('h1').innerText()).toBe('Connected Example ID');
    await tab.close();
    // The consent page kept every choice made on it.
    expect(await page.isChecked('input[name="tool"][value="whoami"]')).toBe(true);
    expect(await page.isChecked(`input[name="login"][value="${LOGIN}"]`)).toBe(true);
  }
  const [redirected] = await Promise.all([
    page.waitForRequest((request) => request.url().startsWith(REDIRECT)),
    page.click('button[value="allow"]', { noWaitAfter: true }),
  ]);
  const code = new URL(redirected.url()).searchParams.get('code')!;
  const token = (await (
    await fetch(`${gatewayUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        client_id: registered.client_id,
        code_verifier: verifier,
        resource: gateway.mcpUrl,
      }).toString(),
    })
  ).json()) as { access_token: string };
  await page.close();
  return { name, context, accessToken: token.access_token };
}

/** Opens a connect URL in the person's browser and links (or returns the refusal page's heading). */
async function openConnectUrl(person: Person, url: string, account = person.name): Promise<string> {
  const page = await person.context.newPage();
  try {
    const response = await page.goto(url);
    // A person with a session and a grant at the provider comes straight back to the callback.
    if (page.url().startsWith(providerIssuer)) await passProvider(page, account);
    else if (!page.url().startsWith(`${gatewayUrl}/connect/callback`)) expect(response?.status()).toBeGreaterThanOrEqual(400);
    return await page.locator('h1').innerText();
  } finally {
    await page.close();
  }
}

const subOf = (result: { structuredContent?: unknown; content?: unknown }) =>
  (result.structuredContent as { sub?: string } | undefined)?.sub;

/** An SDK v2 client (2026-07-28); with `onUrl` it declares URL elicitation and links through it. */
async function modernClient(person: Person, onUrl?: (url: string) => Promise<void>): Promise<Client> {
  const client = new Client(
    { name: `${person.name}-v2`, version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' }, ...(onUrl ? { capabilities: { elicitation: { url: {} } } } : {}) },
  );
  if (onUrl) {
    client.setRequestHandler('elicitation/create', async (request) => {
      await onUrl((request.params as { url: string }).url);
      return { action: 'accept' };
    });
  }
  await client.connect(
    new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), {
      requestInit: { headers: { authorization: `Bearer ${person.accessToken}` } },
    }),
  );
  return client;
}

async function receiptsSince(size: number): Promise<Array<Record<string, unknown>>> {
  const store = gateway.receipts!.store;
  await new Promise((resolve) => setTimeout(resolve, 300));
  const receipts: Array<Record<string, unknown>> = [];
  const head = await store.head();
  for (let index = size; index < head.size; index += 1) receipts.push((await store.get(index)) as unknown as Record<string, unknown>);
  return receipts;
}

/** Moves the stored access token of a person close to its expiry (as time would), so the next call refreshes it. */
async function ageToken(person: string): Promise<void> {
  const name = tokenSecretName(`local:${person}`, LOGIN);
  const stored = JSON.parse((await vault.get(name))!) as Record<string, unknown>;
  await vault.set(name, JSON.stringify({ ...stored, obtainedAt: Date.now() - 600_000, expiresAt: Date.now() + 5_000 }));
}

let alice: Person;
let bob: Person;

describe('OAuth per person', () => {
  it('alice links at consent and her calls carry her own token; bob links when his first call asks (2026-07-28)', async () => {
    alice = await consent('alice', true);
    bob = await consent('bob', false);
    const before = (await gateway.receipts!.store.head()).size;

    const aliceClient = await modernClient(alice);
    try {
      const result = await aliceClient.callTool({ name: 'whoami', arguments: {} });
      expect(result.isError).toBeFalsy();
      expect(subOf(result)).toBe('alice');
    } finally {
      await aliceClient.close();
    }

    const elicited: string[] = [];
    const bobClient = await modernClient(bob, async (url) => {
      elicited.push(url);
      expect(await openConnectUrl(bob, url)).toBe('Connected Example ID');
    });
    try {
      const result = await bobClient.callTool({ name: 'whoami', arguments: {} });
      expect(result.isError).toBeFalsy();
      expect(subOf(result)).toBe('bob');
    } finally {
      await bobClient.close();
    }
    expect(elicited).toHaveLength(1);
    expect(elicited[0]).toMatch(new RegExp(`^${gatewayUrl}/connect\\?ticket=`));
    expect(seenByApi.map((seen) => seen.sub)).toEqual(['alice', 'bob']);

    const receipts = await receiptsSince(before);
    expect(receipts.map((receipt) => [receipt.person, receipt.outcome, receipt.reason, receipt.login])).toEqual([
      ['local:alice', 'allowed', null, `${LOGIN} sub=alice`],
      ['local:bob', 'action-required', 'PERSON_ACTION_REQUIRED', null],
      ['local:bob', 'allowed', null, `${LOGIN} sub=bob`],
    ]);
    // The database and the receipts hold no token.
    const listed = JSON.parse(await cli(['logins', 'list', '--json'])) as { logins: Array<Record<string, unknown>> };
    expect(listed.logins.map((link) => [link.person, link.login, link.subject])).toEqual([
      ['local:alice', LOGIN, 'alice'],
      ['local:bob', LOGIN, 'bob'],
    ]);
    const database = await readFile(join(directory.path, '.gateway', 'gateway.db'));
    const token = JSON.parse((await vault.get(tokenSecretName('local:alice', LOGIN)))!) as { accessToken: string; refreshToken: string };
    expect(database.includes(Buffer.from(token.accessToken))).toBe(false);
    expect(database.includes(Buffer.from(token.refreshToken))).toBe(false);
  }, 90_000);

  it("after unlinking, alice's SDK 1.x call gets -32042; bob cannot use her connect URL; she can, once", async () => {
    const sessionsBefore = await cli(['sessions', 'list', '--json']);
    expect(await cli(['logins', 'unlink', 'local:alice', LOGIN])).toContain(`unlinked ${LOGIN} of local:alice`);
    expect(await cli(['logins', 'list', '--person', 'local:alice'])).toContain('no linked accounts');
    const client = new LegacyClient({ name: 'alice-v1', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    await client.connect(
      new LegacyTransport(new URL(gateway.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${alice.accessToken}` } } }),
    );
    try {
      const error = (await client.callTool({ name: 'whoami', arguments: {} }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      )) as { code: number; data: { elicitations: Array<{ mode: string; url: string }> } } | undefined;
      expect(error?.code).toBe(-32042);
      const url = error!.data.elicitations[0]!.url;
      expect(await openConnectUrl(bob, url)).toBe('This link is for someone else');
      const [version, payload, tag] = new URL(url).searchParams.get('ticket')!.split('.') as [string, string, string];
      const tampered = `${gatewayUrl}/connect?ticket=${version}.${payload.slice(0, -2)}${payload.endsWith('A') ? 'B' : 'A'}.${tag}`;
      expect(await openConnectUrl(alice, tampered)).toBe('This link is not valid');
      // alice opens it in a browser where she is not signed in to the gateway: she signs in on the connect page.
      const fresh = await browser.newContext();
      try {
        const page = await fresh.newPage();
        await page.goto(url);
        expect(await page.locator('h1').innerText()).toBe(`Sign in to ${gatewayUrl}`);
        await page.fill('input[name="name"]', 'alice');
        await page.fill('input[name="password"]', 'not her password');
        await Promise.all([
          page.waitForResponse((response) => response.url().endsWith('/connect/signin')),
          page.click('button[type="submit"]'),
        ]);
        expect(await page.locator('[role="alert"]').innerText()).toContain('do not match');
        await page.fill('input[name="password"]', PASSWORD);
        await Promise.all([page.waitForURL((next) => next.href.startsWith(providerIssuer)), page.click('button[type="submit"]')]);
        await passProvider(page, 'alice');
        expect(await page.locator('h1').innerText()).toBe('Connected Example ID');
      } finally {
        await fresh.close();
      }
      expect(await openConnectUrl(alice, url)).toBe('This link was already used');
      const result = await client.callTool({ name: 'whoami', arguments: {} });
      expect(result.isError).toBeFalsy();
      expect(subOf(result as { structuredContent?: unknown })).toBe('alice');
    } finally {
      await client.close();
    }
    // Unlinking and linking again changed nothing a session may reach (its tools and logins).
    expect(await cli(['sessions', 'list', '--json'])).toBe(sessionsBefore);
    const forged = await fetch(`${gatewayUrl}/connect/callback?code=abc&state=forged`);
    expect(forged.status).toBe(400);
  }, 60_000);

  it('a token about to expire is refreshed before the call, once for five concurrent calls', async () => {
    await ageToken('alice');
    const before = refreshGrants;
    const client = await modernClient(alice);
    try {
      const results = await Promise.all(Array.from({ length: 5 }, () => client.callTool({ name: 'whoami', arguments: {} })));
      expect(results.map(subOf)).toEqual(['alice', 'alice', 'alice', 'alice', 'alice']);
    } finally {
      await client.close();
    }
    expect(refreshGrants - before).toBe(1);
    const stored = JSON.parse((await vault.get(tokenSecretName('local:alice', LOGIN)))!) as { expiresAt: number };
    expect(stored.expiresAt).toBeGreaterThan(Date.now() + 60_000);
  }, 30_000);

  it('a grant revoked at the provider removes the link at the next refresh, and the next call asks for linking again', async () => {
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
    const client = await modernClient(bob);
    try {
      const before = (await gateway.receipts!.store.head()).size;
      const sent = seenByApi.length;
      const failed = await client.callTool({ name: 'whoami', arguments: {} });
      expect(failed.isError).toBe(true);
      expect(JSON.stringify(failed.content)).toContain('invalid_grant');
      expect(seenByApi.length).toBe(sent);
      expect(await vault.get(tokenSecretName('local:bob', LOGIN))).toBeUndefined();
      const asked = await client.callTool({ name: 'whoami', arguments: {} }).then(
        () => undefined,
        (thrown: unknown) => thrown as { code: number; data: { elicitations: Array<{ url: string }> } },
      );
      expect(asked?.code).toBe(-32042);
      expect(asked!.data.elicitations[0]!.url).toMatch(new RegExp(`^${gatewayUrl}/connect\\?ticket=`));
      expect((await receiptsSince(before)).map((receipt) => [receipt.person, receipt.outcome, receipt.reason])).toEqual([
        ['local:bob', 'error', 'CREDENTIALS_UNAVAILABLE'],
        ['local:bob', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ]);
    } finally {
      await client.close();
    }
    expect(
      (JSON.parse(await cli(['logins', 'list', '--json'])) as { logins: Array<{ person: string }> }).logins.map((link) => link.person),
    ).toEqual(['local:alice']);
  }, 30_000);

  it('an operator sees the links on the console Logins page (axe, 390 px) and unlinks one; bob gets 403; no CSRF, no unlink', async () => {
    const linked = () => cli(['logins', 'list', '--person', 'local:alice']);
    expect(await linked()).toContain(LOGIN);
    // bob is signed in at the gateway, without the operator role.
    expect((await bob.context.request.get(`${gatewayUrl}/console/logins`)).status()).toBe(403);
    const byBob = await bob.context.request.post(`${gatewayUrl}/console/logins/unlink`, {
      form: { person: 'local:alice', login: LOGIN, csrf_token: 'not-his' },
    });
    expect(byBob.status()).toBe(403);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(`${gatewayUrl}/console/logins`);
      await page.fill('#name', OPERATOR);
      await page.fill('#password', PASSWORD);
      await Promise.all([page.waitForURL(`${gatewayUrl}/console/logins`), page.click('button[type="submit"]')]);
      const row = page.locator('tbody tr', { hasText: 'local:alice' });
      expect(await row.locator('td[data-label="Login"]').innerText()).toBe(LOGIN);
      expect(await row.locator('td[data-label="At the provider"]').innerText()).toBe('alice');
      expect(await row.locator('td[data-label="Scopes"]').innerText()).toContain('orders:read');
      expect(await page.content()).not.toContain(
        (JSON.parse((await vault.get(tokenSecretName('local:alice', LOGIN)))!) as { accessToken: string }).accessToken,
      );
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: join(SCREENSHOT_DIRECTORY, 'console-logins-desktop.png'), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: join(SCREENSHOT_DIRECTORY, 'console-logins-narrow.png'), fullPage: true });
      // A POST without the page's CSRF token is refused and unlinks nothing.
      const forged = await context.request.post(`${gatewayUrl}/console/logins/unlink`, { form: { person: 'local:alice', login: LOGIN } });
      expect(forged.status()).toBe(403);
      expect(await linked()).toContain(LOGIN);
      await Promise.all([
        page.waitForURL((url) => url.pathname === '/console/logins' && url.searchParams.has('unlinked')),
        row.locator('button', { hasText: 'Unlink' }).click(),
      ]);
      expect(await page.locator('[role="status"]').innerText()).toContain(`${LOGIN} of local:alice is unlinked`);
      expect(await page.locator('tbody tr', { hasText: 'local:alice' }).count()).toBe(0);
    } finally {
      await context.close();
    }
    expect(await linked()).toContain('no linked accounts');
    expect(await vault.get(tokenSecretName('local:alice', LOGIN))).toBeUndefined();
  }, 60_000);
});

/** axe-core's violations on the page (injected through DevTools, so the page's CSP holds). */
async function axeViolations(page: Page): Promise<Array<{ id: string; impact: string }>> {
  await page.evaluate(await readFile(join(repositoryRoot, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8'));
  const results = (await page.evaluate(() => (window as unknown as { axe: { run(): Promise<unknown> } }).axe.run())) as {
    violations: Array<{ id: string; impact: string }>;
  };
  return results.violations.map(({ id, impact }) => ({ id, impact }));
}
