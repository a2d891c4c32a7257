/**
 * The re-approval page without JavaScript, in Chromium: a returning client's earlier choices are kept (tools,
 * login, time limit), a tool that changed since is shown with what changed and left unticked, so Allow alone
 * does not approve it; when the approved version is no longer known the page says so instead of guessing; an
 * MCP tool names its server; a refused submit still shows the changes.
 */
import { createServer, type Server } from 'node:http';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsentTool } from '../src/authorization/index.js';
import {
  authorizeUrl,
  PERSON,
  pkce,
  registerClient,
  startAuthorizationServer,
  type TestAuthorizationServer,
} from './oauth-support/authorization-server.js';

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Mutable: the test "publishes" a change by replacing a tool's fingerprint. */
const tools: ConsentTool[] = [
  {
    name: 'search_orders',
    title: 'Search orders',
    description: 'Lists orders.',
    source: 'orders',
    readOnly: true,
    destructive: false,
    fingerprint: 'sha256:search-1',
    target: { kind: 'http', method: 'GET', path: '/orders' },
    logins: ['orders/api_key'],
  },
  {
    name: 'create_order',
    title: 'Create an order',
    description: 'Places an order.',
    source: 'orders',
    readOnly: false,
    destructive: false,
    fingerprint: 'sha256:create-1',
    target: { kind: 'http', method: 'POST', path: '/orders' },
    logins: ['orders/api_key'],
  },
  {
    name: 'echo',
    title: null,
    description: 'Echoes its input.',
    source: 'everything',
    readOnly: false,
    destructive: true,
    fingerprint: 'sha256:echo-1',
    target: { kind: 'mcp', server: 'everything', tool: 'echo' },
    logins: [],
  },
];

/** The earlier versions the offer still knows: only create_order's. */
const knownChanges = new Map([['create_order sha256:create-1', ['request body schema changed (properties added: note)']]]);

let redirect = '';
let callback: Server;
let server: TestAuthorizationServer;
let browser: Browser;

beforeAll(async () => {
  callback = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('back at the client'));
  await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
  redirect = `http://127.0.0.1:${(callback.address() as { port: number }).port}/callback`;
  server = await startAuthorizationServer({
    tools,
    changesSince: (name, fingerprint) => knownChanges.get(`${name} ${fingerprint}`),
  });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  callback?.closeAllConnections();
  await new Promise((resolve) => callback?.close(resolve));
});

const checkedValues = (page: Page, name: string): Promise<string[]> =>
  page.locator(`input[name="${name}"]:checked`).evaluateAll((boxes) => boxes.map((box) => (box as HTMLInputElement).value).sort());

const optionOf = (page: Page, tool: string) => page.locator('.option', { has: page.locator(`input[name="tool"][value="${tool}"]`) });

describe('re-approval without JavaScript', () => {
  it(
    'keeps the earlier tools, login and time limit, shows each change (or that the earlier version is gone) ' +
      'unticked, and Allow alone does not approve a change',
    async () => {
      const registered = await registerClient(server.issuer, { client_name: 'Re-approval page', redirect_uris: [redirect] });
      const clientId = registered.body.client_id as string;
      const context = await browser.newContext({ javaScriptEnabled: false });
      try {
        const page = await context.newPage();
        const open = async (scope?: string): Promise<void> => {
          const url = new URL(authorizeUrl(server, { clientId, redirectUri: redirect, challenge: pkce().challenge, method: 'S256' }));
          if (scope) url.searchParams.set('scope', scope);
          await page.goto(url.href);
          if (page.url().includes('/signin')) {
            await page.fill('#name', PERSON.name);
            await page.fill('#password', PERSON.password);
            await Promise.all([page.waitForURL(/\/consent\?/), page.click('button[type="submit"]')]);
          }
          expect(page.url()).toContain('/consent?');
        };
        const allow = () => Promise.all([page.waitForURL((url) => url.href.startsWith(redirect)), page.click('button[value="allow"]')]);

        // First approval: three tools for 8 hours; the MCP tool names its server.
        await open();
        expect(await optionOf(page, 'echo').locator('.target').innerText()).toBe('Calls the tool echo of the MCP server everything');
        for (const tool of ['search_orders', 'create_order', 'echo']) await page.check(`input[name="tool"][value="${tool}"]`);
        await page.check('input[name="lifetime"][value="28800"]');
        await allow();
        const first = (await server.store.listSessions()).at(-1)!;
        expect(first.expiresAt - first.createdAt).toBe(28_800_000);

        // Two of them change; the offer knows the earlier create_order but no longer the earlier search_orders.
        tools[0]!.fingerprint = 'sha256:search-2';
        tools[1]!.fingerprint = 'sha256:create-2';
        await open('tools:search_orders');
        expect(await checkedValues(page, 'tool')).toEqual(['echo']);
        expect(await checkedValues(page, 'login')).toEqual([]);
        expect(await page.locator('input[name="lifetime"]:checked').getAttribute('value')).toBe('28800');
        expect(await optionOf(page, 'create_order').locator('.changes li').allInnerTexts()).toEqual([
          'request body schema changed (properties added: note)',
        ]);
        expect(await optionOf(page, 'search_orders').locator('.changes').innerText()).toBe(
          'Changed since you approved it (the earlier version is no longer published).',
        );
        expect(await page.locator('.mark.changed').count()).toBe(2);

        // A refused submit keeps showing what changed.
        await page.uncheck('input[name="tool"][value="echo"]');
        await Promise.all([page.waitForLoadState('load'), page.click('button[value="allow"]')]);
        expect(await page.locator('#form-error').innerText()).toContain('Choose at least one tool');
        expect(await page.locator('.changes').count()).toBe(2);

        // Allow without ticking the changed tools: they are not approved; the time limit is kept.
        await page.check('input[name="tool"][value="echo"]');
        await allow();
        const second = (await server.store.listSessions()).at(-1)!;
        expect(second.id).not.toBe(first.id);
        expect(second.tools).toEqual([{ name: 'echo', fingerprint: 'sha256:echo-1' }]);
        expect(second.expiresAt - second.createdAt).toBe(28_800_000);
      } finally {
        await context.close();
      }
    },
  );
});
