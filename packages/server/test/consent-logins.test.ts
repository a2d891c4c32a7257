/**
 * Consent picks what the chosen tools need (issue 20 item 3), in Chromium: ticking a tool ticks its login
 * (an inline script allowed by the page's CSP nonce); without JavaScript the server adds a tool's only
 * login itself, and refuses a tool with several logins and none ticked before any session exists,
 * drawing the page again with the person's ticks and time limit; title and description are separate.
 */
import { createServer, type Server } from 'node:http';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsentTool } from '../src/authorization/index.js';
import type { LoginSummary as ConsentLogin } from '../src/credentials/index.js';
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
let REDIRECT = '';
let callback: Server;

const TOOLS: ConsentTool[] = [
  {
    name: 'search_orders',
    title: 'Search orders',
    // The importer's shape: summary, blank line, description (the summary is the title too).
    description: 'Search orders\n\nLists orders, newest first.',
    source: 'orders',
    readOnly: true,
    destructive: false,
    fingerprint: 'sha256:aaa',
    target: { kind: 'http', method: 'GET', path: '/orders' },
    logins: ['orders/api_key'],
  },
  {
    name: 'ping',
    title: null,
    description: 'Checks that the API answers.',
    source: 'orders',
    readOnly: true,
    destructive: false,
    fingerprint: 'sha256:bbb',
    target: { kind: 'http', method: 'GET', path: '/ping' },
    logins: [],
  },
  {
    name: 'list_invoices',
    title: 'List invoices',
    description: 'Lists invoices.',
    source: 'billing',
    readOnly: true,
    destructive: false,
    fingerprint: 'sha256:ccc',
    target: { kind: 'http', method: 'GET', path: '/invoices' },
    logins: ['billing/basic', 'billing/token'],
  },
];
const LOGINS: ConsentLogin[] = [
  { id: 'orders/api_key', source: 'orders', scheme: 'api_key', type: 'apiKey' },
  { id: 'billing/basic', source: 'billing', scheme: 'basic', type: 'basic' },
  { id: 'billing/token', source: 'billing', scheme: 'token', type: 'bearer' },
];

let server: TestAuthorizationServer;
let browser: Browser;

beforeAll(async () => {
  // The client's redirect target: a real loopback server, so Allow ends on a page the test can read.
  callback = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('back at the client'));
  await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
  REDIRECT = `http://127.0.0.1:${(callback.address() as { port: number }).port}/callback`;
  server = await startAuthorizationServer({ tools: TOOLS, logins: LOGINS });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  callback?.closeAllConnections();
  await new Promise((resolve) => callback?.close(resolve));
});

async function consentPage(options: { javaScript: boolean }): Promise<{ page: Page; context: BrowserContext; csp: string }> {
  const registered = await registerClient(server.issuer, { client_name: 'Login test', redirect_uris: [REDIRECT] });
  const context = await browser.newContext({ javaScriptEnabled: options.javaScript });
  const page = await context.newPage();
  await page.goto(
    authorizeUrl(server, {
      clientId: registered.body.client_id as string,
      redirectUri: REDIRECT,
      challenge: pkce().challenge,
      method: 'S256',
    }),
  );
  await page.fill('#name', PERSON.name);
  await page.fill('#password', PERSON.password);
  const [response] = await Promise.all([
    page.waitForResponse((candidate) => candidate.url().includes('/consent?')),
    page.click('button[type="submit"]'),
  ]);
  await page.waitForURL(/\/consent\?/);
  return { page, context, csp: (await response.headerValue('content-security-policy')) ?? '' };
}

const checkedValues = (page: Page, name: string): Promise<string[]> =>
  page.locator(`input[name="${name}"]:checked`).evaluateAll((boxes) => boxes.map((box) => (box as HTMLInputElement).value).sort());

describe('consent ticks the logins the chosen tools need', () => {
  it(
    'ticking a tool ticks its login under a CSP that allows only the nonced inline script; select-all ticks them all; ' +
      'unticking unticks',
    async () => {
      const { page, context, csp } = await consentPage({ javaScript: true });
      try {
        // The script runs because it carries the page's nonce, not because scripts are unrestricted.
        expect(csp).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]+'/);
        expect(csp).not.toContain('unsafe-inline');
        expect(await checkedValues(page, 'login')).toEqual([]);
        await page.check('input[name="tool"][value="search_orders"]');
        expect(await checkedValues(page, 'login')).toEqual(['orders/api_key']);
        await page.check('input[name="tool"][value="ping"]');
        expect(await checkedValues(page, 'login')).toEqual(['orders/api_key']);
        await page.uncheck('input[name="tool"][value="search_orders"]');
        expect(await checkedValues(page, 'login')).toEqual([]);
        // Several alternatives: the first is ticked, and the person may switch to the other.
        await page.check('#select-all');
        expect(await checkedValues(page, 'tool')).toEqual(['list_invoices', 'ping', 'search_orders']);
        expect(await checkedValues(page, 'login')).toEqual(['billing/basic', 'orders/api_key']);
        await page.uncheck('#select-all');
        expect(await checkedValues(page, 'login')).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );

  it('with JavaScript off, a tool approved without its only login gets that login in the session', async () => {
    const before = (await server.store.listSessions()).length;
    const { page, context } = await consentPage({ javaScript: false });
    try {
      await page.check('input[name="tool"][value="search_orders"]');
      expect(await checkedValues(page, 'login')).toEqual([]);
      await Promise.all([page.waitForURL((url) => url.href.startsWith(REDIRECT)), page.click('button[value="allow"]')]);
      expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
      const sessions = await server.store.listSessions();
      expect(sessions.length).toBe(before + 1);
      expect(sessions.at(-1)!.tools.map((tool) => tool.name)).toEqual(['search_orders']);
      expect(sessions.at(-1)!.logins).toEqual(['orders/api_key']);
    } finally {
      await context.close();
    }
  });

  it(
    'a tool with several logins and none ticked is refused before any session exists; ' + 'the page keeps the ticks and time limit',
    async () => {
      const before = (await server.store.listSessions()).length;
      const { page, context } = await consentPage({ javaScript: false });
      try {
        await page.check('input[name="tool"][value="list_invoices"]');
        await page.check('input[name="tool"][value="ping"]');
        const lifetimes = await page
          .locator('input[name="lifetime"]')
          .evaluateAll((radios) => radios.map((radio) => (radio as HTMLInputElement).value));
        const secondLifetime = lifetimes[1]!;
        await page.check(`input[name="lifetime"][value="${secondLifetime}"]`);
        await Promise.all([page.waitForLoadState('load'), page.click('button[value="allow"]')]);
        expect(page.url()).toContain('/consent');
        expect(await page.locator('#form-error').innerText()).toContain('list_invoices can use the login billing/basic or billing/token');
        expect((await server.store.listSessions()).length).toBe(before);
        expect(await checkedValues(page, 'tool')).toEqual(['list_invoices', 'ping']);
        expect(await page.locator('input[name="lifetime"]:checked').getAttribute('value')).toBe(secondLifetime);
        // The person settles it and the same page goes through.
        await page.check('input[name="login"][value="billing/token"]');
        await Promise.all([page.waitForURL((url) => url.href.startsWith(REDIRECT)), page.click('button[value="allow"]')]);
        const session = (await server.store.listSessions()).at(-1)!;
        expect(session.logins).toEqual(['billing/token']);
        expect(session.expiresAt - session.createdAt).toBe(Number(secondLifetime) * 1000);
      } finally {
        await context.close();
      }
    },
  );

  it('a tool title and its description are separate elements with different weights; the title is not repeated', async () => {
    const { page, context } = await consentPage({ javaScript: true });
    try {
      const option = page.locator('.option', { has: page.locator('input[value="search_orders"]') });
      const title = option.locator('.tool-title');
      const description = option.locator('.tool-description');
      expect(await title.innerText()).toBe('Search orders');
      expect(await description.innerText()).toBe('Lists orders, newest first.');
      const weights = await Promise.all(
        [title, description].map((element) => element.evaluate((node) => Number(getComputedStyle(node).fontWeight))),
      );
      expect(weights[0]).toBeGreaterThanOrEqual(600);
      expect(weights[1]).toBeLessThan(600);
      const [titleBox, descriptionBox] = await Promise.all([title.boundingBox(), description.boundingBox()]);
      expect(descriptionBox!.y).toBeGreaterThanOrEqual(titleBox!.y + titleBox!.height);
    } finally {
      await context.close();
    }
  });
});
