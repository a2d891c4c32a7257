/**
 * Re-approval is reachable (issue 20 item 4), with real SDK clients and their OAuth providers, the gateway
 * over the example orders API and Chromium approving consent: after a publication changes an approved tool,
 * calling it is answered 403 insufficient_scope with scope="tools:<name>"; the client authorizes again by
 * itself (the v1 SDK after its refresh is refused), the person sees the earlier choices ticked and the
 * changed tool marked, and the same client's call then works. The session store marks the stale tool.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryOAuthClientProvider } from '../../../test-support/oauth-client.js';
import { Client, StreamableHTTPClientTransport, type OAuthClientProvider } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientProvider as LegacyOAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { loadConfig, readLockFile } from '@gateway/core';
import { PeopleDirectory } from '@gateway/runtime';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { markStaleTools, publishedFingerprints } from '../src/authorization/index.js';
import { sessionMigrations, sqliteSessionStore } from '../src/authorization/stores/sqlite/index.js';
import { openDatabase } from '../src/store/sqlite/database.js';
import { gatewayDatabasePath } from '@gateway/runtime';
import { prepareWorkspace, type Workspace } from './support/harness.js';
import { repositoryRoot, runGateway } from '../../../test-support/cli.js';

/** Screenshots go to docs/ only when asked (GATEWAY_UPDATE_SCREENSHOTS=1), so a test run leaves git clean. */
const SCREENSHOT_DIRECTORY = process.env.GATEWAY_UPDATE_SCREENSHOTS === '1' ? join(repositoryRoot, 'docs') : tmpdir();

const PASSWORD = 'a long and careful passphrase';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

let workspace: Workspace;
let gateway: RunningGateway;
let browser: Browser;
let callback: { server: Server; url: string };

beforeAll(async () => {
  const server = createServer((_request, response) =>
    response.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this window.'),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  callback = { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/callback` };
  workspace = await prepareWorkspace();
  await new PeopleDirectory(join(workspace.directory, '.gateway', 'people.json')).add('alice', PASSWORD);
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 1_000,
  });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await workspace?.cleanup();
  callback?.server.closeAllConnections();
  await new Promise((resolve) => callback?.server.close(resolve));
});

interface Consent {
  checkedTools: string[];
  changedTools: string[];
  params: URLSearchParams;
}

/** Chromium signs in and approves; `tick` are ticked on top of what the page starts with. */
async function approveInBrowser(authorizationUrl: URL, tick: string[]): Promise<Consent> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(authorizationUrl.href);
    await page.fill('#name', 'alice');
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(/\/consent\?/), page.click('button[type="submit"]')]);
    const checkedTools = await page
      .locator('input[name="tool"]:checked')
      .evaluateAll((boxes) => boxes.map((box) => (box as HTMLInputElement).value).sort());
    const changedTools = await page
      .locator('.option', { has: page.locator('.mark.changed') })
      .locator('input[name="tool"]')
      .evaluateAll((boxes) => boxes.map((box) => (box as HTMLInputElement).value));
    for (const tool of tick) await page.check(`input[name="tool"][value="${tool}"]`);
    await Promise.all([page.waitForURL((url) => url.href.startsWith(callback.url)), page.click('button[value="allow"]')]);
    return { checkedTools, changedTools, params: new URL(page.url()).searchParams };
  } finally {
    await context.close();
  }
}

/**
 * `connect()` makes a fresh transport and client (a failed first connect leaves its transport closed, as in
 * e2e-auth.test.ts); `finishAuth` and `call` use the latest one, so the step-up happens on a live client.
 */
interface ClientUnderTest {
  provider: MemoryOAuthClientProvider;
  connect(): Promise<void>;
  finishAuth(params: URLSearchParams): Promise<void>;
  call(name: string): Promise<{ isError?: boolean; content: unknown[] }>;
  close(): Promise<void>;
}

function modernClient(): ClientUnderTest {
  const provider = new MemoryOAuthClientProvider(callback.url, 'Re-approval client');
  let transport: StreamableHTTPClientTransport;
  let client: Client;
  return {
    provider,
    async connect() {
      transport = new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { authProvider: provider as unknown as OAuthClientProvider });
      client = new Client({ name: 'reapproval-modern', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(transport);
    },
    finishAuth: (params) => transport.finishAuth(params),
    call: (name) => client.callTool({ name, arguments: {} }) as never,
    close: () => client.close(),
  };
}

function legacyClient(): ClientUnderTest {
  const provider = new MemoryOAuthClientProvider(callback.url, 'Re-approval client');
  let transport: LegacyTransport;
  let client: LegacyClient;
  return {
    provider,
    async connect() {
      transport = new LegacyTransport(new URL(gateway.mcpUrl), { authProvider: provider as unknown as LegacyOAuthClientProvider });
      client = new LegacyClient({ name: 'reapproval-legacy', version: '1.0.0' });
      await client.connect(transport);
    },
    finishAuth: (params) => transport.finishAuth(params.get('code')!),
    call: (name) => client.callTool({ name, arguments: {} }) as never,
    close: () => client.close(),
  };
}

async function sessionsOfStore() {
  // The running gateway's own database, read beside it (SQLite WAL).
  const database = openDatabase(gatewayDatabasePath(await loadConfig(workspace.configPath)), sessionMigrations);
  try {
    return await sqliteSessionStore(database).listSessions();
  } finally {
    database.close();
  }
}

describe.each([
  ['2026-07-28: SDK v2 client', modernClient, '10000'],
  ['2025-11-25: SDK v1 client', legacyClient, '20000'],
] as const)('%s', (_label, makeClient, maximum) => {
  it(
    'after a publication changes an approved tool, the client is challenged, re-authorizes by itself, ' + 'and the call then works',
    async () => {
      const names = [...gateway.registry.snapshot().names];
      const search = names.find((name) => name.startsWith('search'))!;
      const get = names.find((name) => name.startsWith('get'))!;
      const client = makeClient();
      try {
        // First approval: nothing preselected; the person ticks two tools (their login comes with them).
        await expect(client.connect()).rejects.toThrow();
        const first = await approveInBrowser(client.provider.authorizationUrl!, [search, get]);
        expect(first.checkedTools).toEqual([]);
        await client.finishAuth(first.params);
        client.provider.authorizationUrl = undefined;
        await client.connect();
        expect((await client.call(search)).isError ?? false).toBe(false);
        const firstSession = (await sessionsOfStore()).at(-1)!;
        expect(firstSession.tools.map((tool) => tool.name).sort()).toEqual([get, search].sort());

        // The search operation changes and is published: its fingerprint no longer matches the approval.
        const before = (await readLockFile(workspace.lockPath)).sources;
        await workspace.republish((document) => document.replace(/maximum: \d+/, `maximum: ${maximum}`));
        await gateway.reloadLock();
        expect((await readLockFile(workspace.lockPath)).sources).not.toEqual(before);
        const stale = markStaleTools(firstSession.tools, publishedFingerprints(await readLockFile(workspace.lockPath)));
        expect(stale.filter((tool) => tool.stale).map((tool) => tool.name)).toEqual([search]);

        // The call is challenged; the SDK runs authorization again by itself and hands the URL to the app.
        await expect(client.call(search)).rejects.toThrow();
        const again = client.provider.authorizationUrl!;
        expect(again).toBeDefined();
        expect(again.searchParams.get('scope')).toBe(`tools:${search}`);
        const challenged = (await sessionsOfStore()).find((session) => session.id === firstSession.id)!;
        expect(challenged.reapprovalTools).toEqual([search]);
        // The challenge encodes the decision's "a person must act first" (approve again): one receipt, outcome
        // `action-required`.
        const denied = await gateway.receipts!.store.list({ session: firstSession.id, outcome: 'action-required', limit: 100 });
        expect(denied.map((receipt) => [receipt.tool, receipt.reason])).toContainEqual([search, 'TOOL_CHANGED_SINCE_APPROVAL']);

        // The person sees the earlier choices ticked, the changed tool marked and NOT ticked, ticks it and approves.
        const second = await approveInBrowser(again, [search]);
        expect(second.checkedTools).toEqual([get]);
        expect(second.changedTools).toEqual([search]);
        await client.finishAuth(second.params);
        const result = await client.call(search);
        expect(result.isError ?? false).toBe(false);
        const secondSession = (await sessionsOfStore()).at(-1)!;
        expect(secondSession.id).not.toBe(firstSession.id);
        expect(secondSession.tools.find((tool) => tool.name === search)!.fingerprint).toBe(
          gateway.registry.snapshot().tools.get(search)!.entry.fingerprint,
        );
      } finally {
        await client.close().catch(() => undefined);
      }
    },
  );
});

/** The change lines `gateway diff` prints under one changed tool (`  ~ <tool>  <method> <path>`, then indented lines). */
function diffLinesOf(output: string, tool: string): string[] {
  const lines = output.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`  ~ ${tool} `));
  expect(start, output).toBeGreaterThanOrEqual(0);
  const changes: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith('      ')) break;
    changes.push(line.trim());
  }
  return changes;
}

async function axeViolations(page: import('playwright-core').Page): Promise<Array<{ id: string; impact: string }>> {
  // Injected through the DevTools protocol, so the page's own CSP (no external or inline scripts) holds.
  await page.evaluate(await readFile(join(repositoryRoot, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8'));
  const results = (await page.evaluate(() => (window as unknown as { axe: { run(): Promise<unknown> } }).axe.run())) as {
    violations: Array<{ id: string; impact: string }>;
  };
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(({ id, impact }) => ({ id, impact }));
}

describe('the re-approval page says what changed', () => {
  it(
    'a tool approved for 1 hour gains a query parameter: the page shows the sentence of `gateway diff`, leaves the ' +
      'changed tool unticked, preselects 1 hour, shows what each tool calls, Writes badges and fingerprints behind a toggle',
    async () => {
      const names = [...gateway.registry.snapshot().names];
      const search = names.find((name) => name.startsWith('search'))!;
      const get = names.find((name) => name.startsWith('get'))!;
      const create = names.find((name) => name.startsWith('create'))!;
      const client = modernClient();
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      try {
        // First approval: two tools, for 1 hour (not the first, default choice of 15 minutes).
        await expect(client.connect()).rejects.toThrow();
        const page = await context.newPage();
        await page.goto(client.provider.authorizationUrl!.href);
        await page.fill('#name', 'alice');
        await page.fill('#password', PASSWORD);
        await Promise.all([page.waitForURL(/\/consent\?/), page.click('button[type="submit"]')]);
        expect(await page.locator('input[name="lifetime"]:checked').getAttribute('value')).toBe('900');
        await page.check(`input[name="tool"][value="${search}"]`);
        await page.check(`input[name="tool"][value="${get}"]`);
        await page.check('input[name="lifetime"][value="3600"]');
        await Promise.all([page.waitForURL((url) => url.href.startsWith(callback.url)), page.click('button[value="allow"]')]);
        await client.finishAuth(new URL(page.url()).searchParams);
        client.provider.authorizationUrl = undefined;
        await client.connect();
        const firstSession = (await sessionsOfStore()).at(-1)!;
        expect(firstSession.expiresAt - firstSession.createdAt).toBe(3_600_000);

        // The search operation gains a required query parameter; `gateway diff` says so, then it is published.
        const original = await readFile(workspace.documentPath, 'utf8');
        await writeFile(
          workspace.documentPath,
          original.replace(
            '      parameters:\n        - name: status\n',
            '      parameters:\n        - name: owner\n          in: query\n          required: true\n          schema:\n' +
              '            type: string\n        - name: status\n',
          ),
        );
        const diffResult = await runGateway(['diff'], { cwd: workspace.directory, env: workspace.env });
        const diffSentences = diffLinesOf(String(diffResult.stdout), search);
        expect(diffSentences).toContain('query parameter owner added (string, required)');
        await workspace.republish((text) => text);
        await gateway.reloadLock();

        // The client is challenged and asks again; the same browser (still signed in) opens the page.
        await expect(client.call(search)).rejects.toThrow();
        const again = client.provider.authorizationUrl!;
        expect(again.searchParams.get('scope')).toBe(`tools:${search}`);
        await Promise.all([page.waitForURL(/\/consent\?/), page.goto(again.href)]);

        const searchOption = page.locator('.option', { has: page.locator(`input[name="tool"][value="${search}"]`) });
        expect(await searchOption.locator('.mark.changed').count()).toBe(1);
        expect(await searchOption.locator('.changes li').allInnerTexts()).toEqual(diffSentences);
        expect(await page.locator(`input[name="tool"][value="${search}"]`).isChecked()).toBe(false);
        expect(await page.locator(`input[name="tool"][value="${get}"]`).isChecked()).toBe(true);
        expect(await page.locator('input[name="lifetime"]:checked').getAttribute('value')).toBe('3600');
        expect(await searchOption.locator('.target').innerText()).toBe('Calls GET /orders');
        const createOption = page.locator('.option', { has: page.locator(`input[name="tool"][value="${create}"]`) });
        expect(await createOption.locator('.mark.writes').innerText()).toBe('Writes');
        expect(await createOption.locator('.target').innerText()).toBe('Calls POST /orders');
        expect(await page.locator('.mark.writes').count()).toBe(1);
        // Fingerprints are behind a closed toggle: present, not shown until asked for.
        const fingerprint = gateway.registry.snapshot().tools.get(search)!.entry.fingerprint;
        const toggle = searchOption.locator('details');
        expect(await toggle.getAttribute('open')).toBeNull();
        expect(await toggle.locator('code').textContent()).toBe(fingerprint);
        expect(await toggle.locator('code').isVisible()).toBe(false);
        expect(await page.locator('main').innerText()).not.toContain(fingerprint);
        expect(await axeViolations(page)).toEqual([]);
        await page.screenshot({ path: join(SCREENSHOT_DIRECTORY, 'consent-reapproval-desktop.png'), fullPage: true });
        await page.setViewportSize({ width: 390, height: 844 });
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        expect(overflow).toBeLessThanOrEqual(0);
        expect(await axeViolations(page)).toEqual([]);
        await page.screenshot({ path: join(SCREENSHOT_DIRECTORY, 'consent-reapproval-narrow.png'), fullPage: true });

        // The person ticks the changed tool after reading what changed; the new session keeps 1 hour.
        await page.check(`input[name="tool"][value="${search}"]`);
        await Promise.all([page.waitForURL((url) => url.href.startsWith(callback.url)), page.click('button[value="allow"]')]);
        await client.finishAuth(new URL(page.url()).searchParams);
        const secondSession = (await sessionsOfStore()).at(-1)!;
        expect(secondSession.id).not.toBe(firstSession.id);
        expect(secondSession.expiresAt - secondSession.createdAt).toBe(3_600_000);
        expect(secondSession.tools.map((tool) => tool.name).sort()).toEqual([get, search].sort());
      } finally {
        await context.close();
        await client.close().catch(() => undefined);
      }
    },
  );
});
