/**
 * The parts of OAuth-per-person tests: a person in headless Chromium signing in at the gateway, consenting, and
 * linking through the customer's provider's screens (the provider itself: `startPersonProvider` in
 * ./oidc-providers.ts); the person's SDK v2 client; the receipts since a point; a stored token aged as time would.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Vault } from '@gateway/runtime';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import { tokenSecretName } from '../../src/credentials/person/token-vault.js';
import type { ReceiptStore } from '../../src/receipts/store.js';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** oidc-provider's development sign-in and consent screens, as `account`, until the page is back at the gateway. */
export async function passProvider(page: Page, account: string, gatewayUrl: string): Promise<void> {
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

export interface ConsentingPerson {
  name: string;
  context: BrowserContext;
  accessToken: string;
}

export interface ConsentOptions {
  browser: Browser;
  gatewayUrl: string;
  mcpUrl: string;
  name: string;
  password: string;
  /** The tool chosen on the consent page. */
  tool: string;
  /** The login the tool needs (`<source>/<scheme>`), checked on the page after linking there. */
  login: string;
  /** The provider's label ("Connect <label>"). */
  label: string;
  /** Link at consent: click "Connect <label>" beside the tool and pass the provider in the tab it opens. */
  connectAtConsent: boolean;
}

/** The person signs in at the gateway and consents to `tool` for a new client; returns the client's access token. */
export async function consentInBrowser(options: ConsentOptions): Promise<ConsentingPerson> {
  const { gatewayUrl, name } = options;
  const redirect = 'http://127.0.0.1:9/callback';
  const registered = (await (
    await fetch(`${gatewayUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: `${name}'s editor`, redirect_uris: [redirect], token_endpoint_auth_method: 'none' }),
    })
  ).json()) as { client_id: string };
  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL(`${gatewayUrl}/authorize`);
  for (const [key, value] of Object.entries({
    response_type: 'code',
    client_id: registered.client_id,
    redirect_uri: redirect,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    resource: options.mcpUrl,
    state: 'state-1',
  }))
    authorize.searchParams.set(key, value);
  const context = await options.browser.newContext();
  const page = await context.newPage();
  await page.goto(authorize.href);
  await page.fill('input[name="name"]', name);
  await page.fill('input[name="password"]', options.password);
  await Promise.all([page.waitForURL((url) => url.href.includes('/consent')), page.click('button[type="submit"]')]);
  const connect = page.locator('a.connect', { hasText: `Connect ${options.label}` });
  expect(await connect.count()).toBe(1);
  await page.check(`input[name="tool"][value="${options.tool}"]`);
  if (options.connectAtConsent) {
    const [tab] = await Promise.all([context.waitForEvent('page'), connect.click()]);
    await tab.waitForLoadState();
    await passProvider(tab, name, gatewayUrl);
    expect(await tab.locator('h1').innerText()).toBe(`Connected ${options.label}`);
    await tab.close();
    // The consent page kept every choice made on it.
    expect(await page.isChecked(`input[name="tool"][value="${options.tool}"]`)).toBe(true);
    expect(await page.isChecked(`input[name="login"][value="${options.login}"]`)).toBe(true);
  }
  const [redirected] = await Promise.all([
    page.waitForRequest((request) => request.url().startsWith(redirect)),
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
        redirect_uri: redirect,
        client_id: registered.client_id,
        code_verifier: verifier,
        resource: options.mcpUrl,
      }).toString(),
    })
  ).json()) as { access_token: string };
  await page.close();
  return { name, context, accessToken: token.access_token };
}

/** Opens a connect URL in the person's browser and links (or returns the refusal page's heading). */
export async function openConnectUrl(
  person: ConsentingPerson,
  url: string,
  where: { gatewayUrl: string; providerIssuer: string },
  account = person.name,
): Promise<string> {
  const page = await person.context.newPage();
  try {
    const response = await page.goto(url);
    // A person with a session and a grant at the provider comes straight back to the callback.
    if (page.url().startsWith(where.providerIssuer)) await passProvider(page, account, where.gatewayUrl);
    else if (!page.url().startsWith(`${where.gatewayUrl}/connect/callback`)) expect(response?.status()).toBeGreaterThanOrEqual(400);
    return await page.locator('h1').innerText();
  } finally {
    await page.close();
  }
}

/** An SDK v2 client (2026-07-28) of the gateway's `mcpUrl` as `person`; with `onUrl` it declares URL elicitation and links through it. */
export async function modernClientOf(mcpUrl: string, person: ConsentingPerson, onUrl?: (url: string) => Promise<void>): Promise<Client> {
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
    new StreamableHTTPClientTransport(new URL(mcpUrl), {
      requestInit: { headers: { authorization: `Bearer ${person.accessToken}` } },
    }),
  );
  return client;
}

/** The receipts of `store` from leaf `size` on, read after a pause (a receipt's move into the database follows the answer). */
export async function receiptsFrom(store: ReceiptStore, size: number): Promise<Array<Record<string, unknown>>> {
  await new Promise((resolve) => setTimeout(resolve, 300));
  const receipts: Array<Record<string, unknown>> = [];
  const head = await store.head();
  for (let index = size; index < head.size; index += 1) receipts.push((await store.get(index)) as unknown as Record<string, unknown>);
  return receipts;
}

/**
 * Moves the access token stored for `person` (as the gateway names people: `local:alice`, `oidc:<issuer>#alice`) and
 * `login` close to its expiry (as time would), so the next call refreshes it.
 */
export async function ageStoredToken(vault: Vault, person: string, login: string): Promise<void> {
  const name = tokenSecretName(person, login);
  const stored = JSON.parse((await vault.get(name))!) as Record<string, unknown>;
  await vault.set(name, JSON.stringify({ ...stored, obtainedAt: Date.now() - 600_000, expiresAt: Date.now() + 5_000 }));
}
