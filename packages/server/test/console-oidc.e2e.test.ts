/**
 * The console for people signed in through OIDC (a real oidc-provider on loopback, a real gateway, Chromium):
 * the `auth.oidc.operators` claim decides. Opening /console leads to the gateway's sign-in page, the provider,
 * and back to /console; a person whose `groups` claim holds the mapped value sees it, anyone else gets 403.
 */
import type { Server } from 'node:http';
import { pino } from 'pino';
import { chromium, type Browser } from 'playwright-core';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { prepareWorkspace, type Workspace } from './support/harness.js';
import { freePort } from './support/net.js';

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const CLIENT_SECRET = 'a-provider-client-secret-for-console-tests';

let workspace: Workspace;
let gateway: RunningGateway;
let providerServer: Server;
let providerIssuer: string;
let browser: Browser;

beforeAll(async () => {
  const providerPort = await freePort();
  providerIssuer = `http://127.0.0.1:${providerPort}`;
  workspace = await prepareWorkspace({
    configExtra: [
      'auth:',
      '  oidc:',
      `    issuer: ${providerIssuer}`,
      '    clientId: gateway',
      '    clientSecret: oidc-client-secret',
      '    label: Sign in with Example Corp',
      '    operators: { claim: groups, values: [gateway-operators] }',
    ].join('\n'),
  });
  workspace.env.GATEWAY_SECRET_OIDC_CLIENT_SECRET = CLIENT_SECRET;
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 1_000,
  });
  const provider = new Provider(providerIssuer, {
    clients: [
      {
        client_id: 'gateway',
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${gateway.url}/signin/oidc/callback`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    claims: { openid: ['sub', 'groups'], email: ['email', 'email_verified'], profile: ['name'] },
    async findAccount(_context: unknown, id: string) {
      return {
        accountId: id,
        async claims() {
          const groups = id === 'olga' ? ['staff', 'gateway-operators'] : ['staff'];
          return { sub: id, email: `${id}@corp.example`, email_verified: true, name: id, groups };
        },
      };
    },
    features: { devInteractions: { enabled: true } },
  } as never);
  providerServer = provider.listen(providerPort);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  providerServer?.closeAllConnections();
  await new Promise((resolve) => providerServer?.close(resolve));
  await gateway?.close();
  await workspace?.cleanup();
});

/** Opens /console/sessions, signs in at the provider as `login`; the status and text of the page it ends on. */
async function openConsoleAs(login: string): Promise<{ url: string; status: number; text: string }> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${gateway.url}/console/sessions`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await Promise.all([page.waitForURL((url) => url.href.startsWith(providerIssuer)), page.click('text=Sign in with Example Corp')]);
    await page.fill('input[name="login"]', login);
    await page.fill('input[name="password"]', 'anything');
    await page.click('button[type="submit"]');
    await page.waitForURL((url) => url.href.startsWith(gateway.url) || url.href.includes('/interaction/'));
    if (!page.url().startsWith(gateway.url)) {
      await Promise.all([page.waitForURL((url) => url.href.startsWith(gateway.url)), page.click('button[type="submit"]')]);
    }
    const response = await page.reload();
    return { url: page.url(), status: response!.status(), text: await page.locator('main').innerText() };
  } finally {
    await context.close();
  }
}

describe('the console for OIDC sign-ins', () => {
  it('a person whose groups claim holds the mapped value is brought back to the console and sees it', async () => {
    const opened = await openConsoleAs('olga');
    expect(opened.url).toBe(`${gateway.url}/console/sessions`);
    expect(opened.status).toBe(200);
    expect(opened.text).toContain('Signed in as olga (operator)');
  });

  it('a person without it is brought back and refused with 403', async () => {
    const opened = await openConsoleAs('bob');
    expect(opened.url).toBe(`${gateway.url}/console/sessions`);
    expect(opened.status).toBe(403);
    expect(opened.text).toContain('does not have the operator role');
  });
});
