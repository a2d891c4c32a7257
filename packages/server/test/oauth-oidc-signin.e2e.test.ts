/**
 * Sign-in through a company OpenID Connect provider (a real oidc-provider on loopback), driven in
 * Chromium: the person chooses the provider on the gateway's sign-in page, signs in there, and comes
 * back to the consent page as `oidc:<iss>#<sub>` with the provider's name and verified email.
 */
import type { Server } from 'node:http';
import { chromium, type Browser } from 'playwright-core';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/net.js';
import {
  authorizeUrl,
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
const REDIRECT = 'http://127.0.0.1:9/callback';

let server: TestAuthorizationServer;
let providerServer: Server;
let providerIssuer: string;
let browser: Browser;

beforeAll(async () => {
  const providerPort = await freePort();
  providerIssuer = `http://127.0.0.1:${providerPort}`;
  server = await startAuthorizationServer({
    authYaml: [
      'oidc:',
      `  issuer: ${providerIssuer}`,
      '  clientId: gateway',
      '  clientSecret: oidc-client-secret',
      '  label: Sign in with Example Corp',
    ].join('\n'),
  });
  await server.vault.set('oidc-client-secret', 'a-provider-client-secret-for-tests');
  const provider = new Provider(providerIssuer, {
    clients: [
      {
        client_id: 'gateway',
        client_secret: 'a-provider-client-secret-for-tests',
        redirect_uris: [`${server.issuer}/signin/oidc/callback`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    async findAccount(_context: unknown, id: string) {
      return {
        accountId: id,
        async claims() {
          return { sub: id, email: `${id}@corp.example`, email_verified: true, name: 'Bob Builder' };
        },
      };
    },
    features: { devInteractions: { enabled: true } },
  } as never);
  providerServer = provider.listen(providerPort);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  providerServer?.closeAllConnections();
  await new Promise((resolve) => providerServer?.close(resolve));
  await server?.close();
});

describe('sign-in through the OIDC provider', () => {
  it('a person signs in at the provider and reaches consent as oidc:<iss>#<sub>, then approves', async () => {
    const registered = await registerClient(server.issuer, { client_name: 'OIDC test client', redirect_uris: [REDIRECT] });
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const redirects: string[] = [];
      page.on('request', (request) => {
        if (request.url().startsWith(REDIRECT)) redirects.push(request.url());
      });
      await page.goto(
        authorizeUrl(server, {
          clientId: registered.body.client_id as string,
          redirectUri: REDIRECT,
          challenge: pkce().challenge,
          method: 'S256',
        }),
      );
      await Promise.all([page.waitForURL((url) => url.href.startsWith(providerIssuer)), page.click('text=Sign in with Example Corp')]);
      // oidc-provider's development login and consent screens.
      await page.fill('input[name="login"]', 'bob');
      await page.fill('input[name="password"]', 'anything');
      await page.click('button[type="submit"]');
      await page.waitForURL((url) => url.href.startsWith(server.issuer) || url.href.includes('/interaction/'));
      if (!page.url().startsWith(server.issuer)) {
        await Promise.all([page.waitForURL((url) => url.href.startsWith(`${server.issuer}/consent`)), page.click('button[type="submit"]')]);
      }
      expect(page.url()).toContain('/consent?request=');
      expect(await page.locator('main').innerText()).toContain('Bob Builder (bob@corp.example)');
      await page.check('input[name="tool"][value="get_order"]');
      // The client's redirect URI has no listener: wait for the browser to ask for it, not for a page.
      await Promise.all([
        page.waitForRequest((request) => request.url().startsWith(REDIRECT)),
        page.click('button[value="allow"]', { noWaitAfter: true }),
      ]);
      const session = (await server.store.listSessions()).at(-1)!;
      expect(session.subject).toBe(`oidc:${providerIssuer}#bob`);
      expect(session.personName).toBe('Bob Builder');
      expect(session.tools).toEqual([{ name: 'get_order', fingerprint: 'sha256:bbb' }]);
      expect(redirects.some((url) => new URL(url).searchParams.get('code'))).toBe(true);
    } finally {
      await context.close();
    }
  });

  it('a callback without a sign-in started from this browser is refused', async () => {
    const response = await fetch(`${server.issuer}/signin/oidc/callback?code=abc&state=forged`);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('This sign-in has expired');
  });
});
