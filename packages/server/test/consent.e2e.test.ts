/**
 * The consent page in Chromium: screenshots at desktop and narrow widths (kept in docs/; refresh them with
 * GATEWAY_UPDATE_SCREENSHOTS=1), an axe-core
 * accessibility audit in the page, the select-all control, and the CSP that forbids framing.
 */
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../../test-support/cli.js';
import {
  authorizeUrl,
  PERSON,
  pkce,
  registerClient,
  startAuthorizationServer,
  type TestAuthorizationServer,
} from './oauth-support/authorization-server.js';

/** Screenshots go to docs/ only when asked (GATEWAY_UPDATE_SCREENSHOTS=1), so a test run leaves git clean. */
const SCREENSHOT_DIRECTORY = process.env.GATEWAY_UPDATE_SCREENSHOTS === '1' ? join(repositoryRoot, 'docs') : tmpdir();

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

let server: TestAuthorizationServer;
let browser: Browser;
let axeSource: string;

beforeAll(async () => {
  server = await startAuthorizationServer();
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
  axeSource = await readFile(join(repositoryRoot, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function consentPageIn(width: number, height: number): Promise<{ page: Page; close(): Promise<void> }> {
  const registered = await registerClient(server.issuer, {
    client_name: 'Claude Desktop (example)',
    redirect_uris: ['http://127.0.0.1:33418/callback'],
  });
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  await page.goto(
    authorizeUrl(server, {
      clientId: registered.body.client_id as string,
      redirectUri: 'http://127.0.0.1:33418/callback',
      challenge: pkce().challenge,
      method: 'S256',
    }),
  );
  await page.fill('#name', PERSON.name);
  await page.fill('#password', PERSON.password);
  await Promise.all([page.waitForURL(/\/consent\?/), page.click('button[type="submit"]')]);
  return { page, close: () => context.close() };
}

async function audit(page: Page): Promise<Array<{ id: string; impact: string; help: string; nodes: number }>> {
  // Injected through the DevTools protocol, so the page's own CSP (no external or inline scripts) holds.
  await page.evaluate(axeSource);
  const results = (await page.evaluate(() => (window as unknown as { axe: { run(): Promise<unknown> } }).axe.run())) as {
    violations: Array<{ id: string; impact: string; help: string; nodes: unknown[] }>;
  };
  return results.violations.map((violation) => ({
    id: violation.id,
    impact: violation.impact,
    help: violation.help,
    nodes: violation.nodes.length,
  }));
}

describe('consent page in Chromium', () => {
  it('at desktop width: shows client, redirect host, gateway and grouped tools; no serious or critical axe violations', async () => {
    const { page, close } = await consentPageIn(1280, 900);
    try {
      const text = await page.locator('main').innerText();
      expect(text).toContain('Claude Desktop (example)');
      expect(text).toContain('127.0.0.1:33418');
      expect(text).toContain(server.issuer);
      expect(text).toContain('only returns to addresses on this computer');
      expect(await page.locator('fieldset fieldset legend').allInnerTexts()).toEqual(['Source orders']);
      expect(await page.locator('.mark.destructive').count()).toBe(1);
      expect(await page.locator('.mark.read-only').count()).toBe(2);
      // Neither read-only nor destructive: create_order writes.
      expect(await page.locator('.mark.writes').count()).toBe(1);
      expect(await page.locator('.target').allInnerTexts()).toContain('Calls POST /orders');
      // Fingerprints sit behind closed toggles, one per tool.
      expect(await page.locator('details:not([open]) > summary').allInnerTexts()).toEqual(Array(4).fill('Fingerprint'));
      expect(text).not.toContain('sha256:aaa');
      const violations = await audit(page);
      expect(violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')).toEqual([]);
      await page.screenshot({ path: join(SCREENSHOT_DIRECTORY, 'consent-desktop.png'), fullPage: true });
    } finally {
      await close();
    }
  });

  it('at a narrow (phone) width: no serious or critical axe violations and no horizontal scrolling', async () => {
    const { page, close } = await consentPageIn(390, 844);
    try {
      const violations = await audit(page);
      expect(violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')).toEqual([]);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      await page.screenshot({ path: join(SCREENSHOT_DIRECTORY, 'consent-narrow.png'), fullPage: true });
    } finally {
      await close();
    }
  });

  it('nothing is preselected; select-all ticks every tool and unticks them again', async () => {
    const { page, close } = await consentPageIn(1280, 900);
    try {
      expect(await page.locator('input[name="tool"]:checked').count()).toBe(0);
      expect(await page.locator('input[name="login"]:checked').count()).toBe(0);
      await page.check('#select-all');
      expect(await page.locator('input[name="tool"]:checked').count()).toBe(4);
      await page.uncheck('#select-all');
      expect(await page.locator('input[name="tool"]:checked').count()).toBe(0);
    } finally {
      await close();
    }
  });

  it('the sign-in page has no serious or critical axe violations and labels its fields', async () => {
    const registered = await registerClient(server.issuer, {
      client_name: 'Sign-in audit',
      redirect_uris: ['http://127.0.0.1:33418/callback'],
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(
        authorizeUrl(server, {
          clientId: registered.body.client_id as string,
          redirectUri: 'http://127.0.0.1:33418/callback',
          challenge: pkce().challenge,
          method: 'S256',
        }),
      );
      expect(await page.getByLabel('Name').count()).toBe(1);
      expect(await page.getByLabel('Password').count()).toBe(1);
      const violations = await audit(page);
      expect(violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('the page cannot be framed by another site', async () => {
    const { page, close } = await consentPageIn(1280, 900);
    const consentUrl = page.url();
    await close();
    const context = await browser.newContext();
    try {
      const framing = await context.newPage();
      await framing.setContent(`<iframe src="${consentUrl}" width="600" height="400"></iframe>`);
      await framing.waitForTimeout(500);
      const frame = framing.frames().find((candidate) => candidate !== framing.mainFrame());
      const content = frame ? await frame.content().catch(() => '') : '';
      // Chromium replaces the framed consent page with its own "blocked" page (frame-ancestors 'none').
      expect(content).not.toContain('csrf_token');
      expect(content).toContain('ERR_BLOCKED_BY_RESPONSE');
    } finally {
      await context.close();
    }
  });
});
