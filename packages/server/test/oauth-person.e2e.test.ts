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
 * expire is refreshed once for five concurrent calls; a grant revoked at the provider removes the link at the
 * refresh, and that very call asks for linking again.
 */
import { createServer, type Server } from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { chromium, type Browser, type Page } from 'playwright-core';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '@gateway/core';
import { createVault, PeopleDirectory, type Vault } from '@gateway/runtime';
import { repositoryRoot, runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { tokenSecretName } from '../src/credentials/person/token-vault.js';
import { freePort } from './support/net.js';
import {
  CHROMIUM_ARGS,
  consentInBrowser,
  openConnectUrl as openConnectUrlOf,
  passProvider as passProviderTo,
  type ConsentingPerson as Person,
  ageStoredToken,
  modernClientOf,
  receiptsFrom,
} from './support/person-provider.js';
import { startPersonProvider, type RunningProvider } from './support/oidc-providers.js';

const PASSWORD = 'correct horse battery staple';
const CLIENT_SECRET = 'provider-client-secret-for-tests';
const ADMIN_TOKEN = 'admin-token-for-person-logins';
const LOGIN = 'who/oauth';
const OPERATOR = 'olga';
/** The console's Logins screenshots go to docs/ with GATEWAY_UPDATE_SCREENSHOTS=1 (as console.e2e.test.ts's do). */
const SCREENSHOT_DIRECTORY = process.env.GATEWAY_UPDATE_SCREENSHOTS === '1' ? join(repositoryRoot, 'docs') : tmpdir();

let directory: { path: string; cleanup(): Promise<void> };
let provider: RunningProvider | undefined;
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
  provider = await startPersonProvider({
    port: providerPort,
    gatewayUrl,
    clientId: 'gateway',
    clientSecret: CLIENT_SECRET,
    resource: () => apiUrl,
    scope: 'orders:read',
    onRefresh: () => {
      refreshGrants += 1;
    },
  });
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
  await provider?.close();
  api?.closeAllConnections();
  await new Promise((resolve) => api?.close(resolve));
  await directory?.cleanup();
});

const passProvider = (page: Parameters<typeof passProviderTo>[0], account: string) => passProviderTo(page, account, gatewayUrl);

/**
 * The person signs in at the gateway and consents to `whoami` for a new client; `connectAtConsent` first
 * clicks "Connect Example ID" beside the tool and links in the tab it opens.
 */
const consent = (name: string, connectAtConsent: boolean): Promise<Person> =>
  consentInBrowser({
    browser,
    gatewayUrl,
    mcpUrl: gateway.mcpUrl,
    name,
    password: PASSWORD,
    tool: 'whoami',
    login: LOGIN,
    label: 'Example ID',
    connectAtConsent,
  });

/** Opens a connect URL in the person's browser and links (or returns the refusal page's heading). */
const openConnectUrl = (person: Person, url: string, account = person.name): Promise<string> =>
  openConnectUrlOf(person, url, { gatewayUrl, providerIssuer }, account);

const subOf = (result: { structuredContent?: unknown; content?: unknown }) =>
  (result.structuredContent as { sub?: string } | undefined)?.sub;

/** An SDK v2 client (2026-07-28); with `onUrl` it declares URL elicitation and links through it. */
const modernClient = (person: Person, onUrl?: (url: string) => Promise<void>) => modernClientOf(gateway.mcpUrl, person, onUrl);
const receiptsSince = (size: number) => receiptsFrom(gateway.receipts!.store, size);
const ageToken = (person: string) => ageStoredToken(vault, `local:${person}`, LOGIN);

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

  it('a grant revoked at the provider: the call whose refresh finds it asks for linking again, and nothing goes upstream', async () => {
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
      // The very call whose refresh met invalid_grant answers "a person must act first" with the connect page.
      const asked = await client.callTool({ name: 'whoami', arguments: {} }).then(
        () => undefined,
        (thrown: unknown) => thrown as { code: number; data: { elicitations: Array<{ url: string }> } },
      );
      expect(asked?.code).toBe(-32042);
      expect(asked!.data.elicitations[0]!.url).toMatch(new RegExp(`^${gatewayUrl}/connect\\?ticket=`));
      expect(seenByApi.length).toBe(sent);
      expect(await vault.get(tokenSecretName('local:bob', LOGIN))).toBeUndefined();
      expect((await receiptsSince(before)).map((receipt) => [receipt.person, receipt.outcome, receipt.reason])).toEqual([
        ['local:bob', 'action-required', 'PERSON_ACTION_REQUIRED'],
      ]);
      // bob links again through that URL, and his retry runs as him.
      expect(await openConnectUrl(bob, asked!.data.elicitations[0]!.url)).toBe('Connected Example ID');
      const result = await client.callTool({ name: 'whoami', arguments: {} });
      expect(subOf(result)).toBe('bob');
      expect(await cli(['logins', 'unlink', 'local:bob', LOGIN])).toContain(`unlinked ${LOGIN} of local:bob`);
    } finally {
      await client.close();
    }
    expect(
      (JSON.parse(await cli(['logins', 'list', '--json'])) as { logins: Array<{ person: string }> }).logins.map((link) => link.person),
    ).toEqual(['local:alice']);
  }, 90_000);

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
    // The unlink is receipted: the operator, the action and what it was taken on.
    const [receipt] = (await gateway.receipts!.store.list({ limit: 20, newestFirst: true })).filter(
      (candidate) => candidate.action?.kind === 'console' && candidate.action.action === 'login.unlink',
    );
    expect(receipt).toMatchObject({
      person: `local:${OPERATOR}`,
      outcome: 'allowed',
      action: { kind: 'console', action: 'login.unlink', operator: OPERATOR, target: `local:alice ${LOGIN}` },
    });
  }, 90_000);
});

/** axe-core's violations on the page (injected through DevTools, so the page's CSP holds). */
async function axeViolations(page: Page): Promise<Array<{ id: string; impact: string }>> {
  await page.evaluate(await readFile(join(repositoryRoot, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8'));
  const results = (await page.evaluate(() => (window as unknown as { axe: { run(): Promise<unknown> } }).axe.run())) as {
    violations: Array<{ id: string; impact: string }>;
  };
  return results.violations.map(({ id, impact }) => ({ id, impact }));
}
