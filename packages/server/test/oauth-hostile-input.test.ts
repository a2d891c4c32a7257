/**
 * Hostile input against the authorization server (issue 15, items 4, 5, 6 and the OAuth part of 10): each
 * case here was accepted by the gateway before; docs/security.md › Hostile input lists them with counts.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyRedirectUri, redirectUriMatches } from '../src/authorization/oauth/redirect-uris.js';
import { join } from 'node:path';
import { PeopleDirectory } from '@gateway/runtime';
import {
  approve,
  authorizeUrl,
  Browser,
  hiddenField,
  PERSON,
  pkce,
  registerClient,
  startAuthorizationServer,
  tokenRequest,
  type TestAuthorizationServer,
} from './oauth-support/authorization-server.js';

const REDIRECT = 'http://127.0.0.1:9/callback';
/** A second person: the one who tries to continue someone else's request. */
const MALLORY = { name: 'mallory', password: 'mallory has a long password too' };

/** Registration → sign-in → consent → code → tokens, over HTTP as a client and a browser would. */
async function authorise(server: TestAuthorizationServer): Promise<{ clientId: string; accessToken: string; refreshToken: string }> {
  const registered = await registerClient(server.issuer, {
    client_name: 'Hostile test',
    redirect_uris: [REDIRECT],
    grant_types: ['authorization_code', 'refresh_token'],
  });
  const clientId = registered.body.client_id as string;
  const { verifier, challenge } = pkce();
  const location = await approve(
    server,
    { clientId, redirectUri: REDIRECT, challenge, method: 'S256' },
    { tools: ['search_orders'], logins: ['orders/api_key'] },
  );
  const tokens = await tokenRequest(server.issuer, {
    grant_type: 'authorization_code',
    code: location.searchParams.get('code')!,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: REDIRECT,
  });
  expect(tokens.status).toBe(200);
  return { clientId, accessToken: tokens.body.access_token as string, refreshToken: tokens.body.refresh_token as string };
}

async function mcpStatus(server: TestAuthorizationServer, token: string): Promise<number> {
  return (await fetch(server.mcpUrl, { method: 'POST', headers: { authorization: `Bearer ${token}` } })).status;
}

describe('loopback redirect URIs: only the port may vary (RFC 8252 §7.3)', () => {
  const registered = 'http://127.0.0.1:9/callback';
  const refused = [
    'http://evil.example@127.0.0.1:9/callback',
    'http://evil.example:x@127.0.0.1:9/callback',
    'http://127.0.0.1:9/call\tback',
    'http://127.0.0.1:9/callback ',
    ' http://127.0.0.1:9/callback',
    'http://127.0.0.1:9/callback\n',
    'http://127.1:9/callback',
    'http://2130706433:9/callback',
    'http://0x7f.0.0.1:9/callback',
    'http://0177.0.0.1:9/callback',
    'http://127.000.000.001:9/callback',
    'http://%31%32%37.0.0.1:9/callback',
    'HTTP://127.0.0.1:9/callback',
    'http:/127.0.0.1:9/callback',
    'http://127.0.0.1:9/./callback',
    'http://127.0.0.1:9/x/../callback',
    'http://127.0.0.1:9/callback#',
    'http://[::ffff:127.0.0.1]:9/callback',
  ];

  it.each(refused)('a requested %j does not match the registered loopback URI', (requested) => {
    expect(redirectUriMatches(registered, requested)).toBe(false);
  });

  it('the same URI with another port still matches; another host spelling or path does not', () => {
    expect(redirectUriMatches(registered, 'http://127.0.0.1:51234/callback')).toBe(true);
    expect(redirectUriMatches('http://127.0.0.1/callback', 'http://127.0.0.1:51234/callback')).toBe(true);
    expect(redirectUriMatches(registered, 'http://localhost:9/callback')).toBe(false);
    expect(redirectUriMatches(registered, 'http://127.0.0.1:9/Callback')).toBe(false);
    expect(redirectUriMatches(registered, 'http://127.0.0.1:99999/callback')).toBe(false);
  });
});

describe('redirect URIs a client may register', () => {
  const refused = [
    'javascript.x:alert(1)',
    'javascript:alert(1)',
    'JavaScript:alert(1)',
    'vbscript.x:msgbox',
    'com.example.javascript:alert(1)',
    'data.x:text/html,<script>alert(1)</script>',
    'data:text/html,hi',
    'file.x:///etc/passwd',
    'file:///etc/passwd',
    'myapp:/cb',
    'http://2130706433:9/cb',
    'http://127.1:9/cb',
    'https://2130706433/cb',
    'https://0x7f000001/cb',
    'https://App.Example.com/cb',
    'https://user@app.example.com/cb',
    'https:app.example.com/cb',
    'https://app.example.com/c b',
    'https://app.example.com/cb\t',
    `https://app.example.com/${'a'.repeat(2000)}`,
  ];

  it.each(refused)('%j is refused', (uri) => {
    expect(classifyRedirectUri(uri)).toHaveProperty('problem');
  });

  it('reverse-domain private-use schemes, https and loopback http are accepted', () => {
    expect(classifyRedirectUri('com.example.app:/cb')).toEqual({ kind: 'private-use' });
    expect(classifyRedirectUri('com.example.app:/oauth2redirect/example-provider')).toEqual({ kind: 'private-use' });
    expect(classifyRedirectUri('https://app.example.com/cb?x=1')).toEqual({ kind: 'https' });
    expect(classifyRedirectUri('http://[::1]:8080/cb')).toEqual({ kind: 'loopback' });
    expect(classifyRedirectUri('http://localhost/cb')).toEqual({ kind: 'loopback' });
  });
});

describe('dynamic client registration caps (RFC 7591)', () => {
  let server: TestAuthorizationServer;
  beforeAll(async () => {
    server = await startAuthorizationServer({ authYaml: 'registration:\n  perIpPerHour: 1000' });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('javascript.x:, a decimal IPv4 host and userinfo are refused with invalid_redirect_uri', async () => {
    for (const uri of [
      'javascript.x:alert(1)',
      'http://2130706433:9/cb',
      'http://evil.example@127.0.0.1:9/callback',
      'http://127.1:9/cb',
    ]) {
      const { status, body } = await registerClient(server.issuer, { redirect_uris: [uri] });
      expect(status, uri).toBe(400);
      expect(body.error, uri).toBe('invalid_redirect_uri');
    }
  });

  it('20,000 redirect URIs are refused; 20 are accepted', async () => {
    const many = Array.from({ length: 20_000 }, (_, index) => `http://127.0.0.1/cb${index}`);
    const tooMany = await fetch(`${server.issuer}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: many }),
    });
    expect(tooMany.status).toBeGreaterThanOrEqual(400);
    expect(tooMany.status).toBeLessThan(500);
    const justOver = await registerClient(server.issuer, { redirect_uris: many.slice(0, 21) });
    expect(justOver.status).toBe(400);
    expect(justOver.body.error).toBe('invalid_redirect_uri');
    expect((await registerClient(server.issuer, { redirect_uris: many.slice(0, 20) })).status).toBe(201);
  });

  it('a 900 KB client_uri is refused (413), a 2,001-character or non-https one with invalid_client_metadata', async () => {
    const huge = await fetch(`${server.issuer}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['http://127.0.0.1/cb'], client_uri: `https://app.example.com/${'a'.repeat(900_000)}` }),
    });
    expect(huge.status).toBe(413);
    for (const clientUri of [`https://app.example.com/${'a'.repeat(1977)}`, 'javascript:alert(1)', 'http://app.example.com/', 42]) {
      const { status, body } = await registerClient(server.issuer, { redirect_uris: ['http://127.0.0.1/cb'], client_uri: clientUri });
      expect(status, String(clientUri).slice(0, 40)).toBe(400);
      expect(body.error).toBe('invalid_client_metadata');
    }
    const fine = await registerClient(server.issuer, {
      redirect_uris: ['http://127.0.0.1/cb'],
      client_uri: 'https://app.example.com/about',
    });
    expect(fine.status).toBe(201);
    expect(fine.body.client_uri).toBe('https://app.example.com/about');
  });

  it('a client_name over 200 characters and a scope over 1,000 are refused', async () => {
    expect((await registerClient(server.issuer, { redirect_uris: ['http://127.0.0.1/cb'], client_name: 'n'.repeat(201) })).body.error).toBe(
      'invalid_client_metadata',
    );
    expect((await registerClient(server.issuer, { redirect_uris: ['http://127.0.0.1/cb'], scope: 's'.repeat(1001) })).body.error).toBe(
      'invalid_client_metadata',
    );
  });

  it('/authorize refuses a userinfo, tab or trailing-space variant of a registered loopback URI on its own page', async () => {
    const { body } = await registerClient(server.issuer, { redirect_uris: ['http://127.0.0.1:9/callback'] });
    const clientId = body.client_id as string;
    for (const redirectUri of [
      'http://evil.example@127.0.0.1:9/callback',
      'http://127.0.0.1:9/call\tback',
      'http://127.0.0.1:9/callback ',
      'http://127.1:9/callback',
    ]) {
      const response = await fetch(authorizeUrl(server, { clientId, redirectUri, challenge: pkce().challenge, method: 'S256' }), {
        redirect: 'manual',
      });
      expect(response.status, JSON.stringify(redirectUri)).toBe(400);
      expect(response.headers.get('location'), JSON.stringify(redirectUri)).toBeNull();
    }
    const ok = await fetch(
      authorizeUrl(server, { clientId, redirectUri: 'http://127.0.0.1:4567/callback', challenge: pkce().challenge, method: 'S256' }),
      { redirect: 'manual' },
    );
    expect(ok.status).toBe(303);
  });
});

describe('refresh token rotation survives a lost answer (RFC 9700 §4.14.2, grace window)', () => {
  let server: TestAuthorizationServer;
  beforeAll(async () => {
    server = await startAuthorizationServer({ authYaml: 'registration:\n  perIpPerHour: 1000\ntokens:\n  refreshReuseGraceSeconds: 1' });
  });
  afterAll(async () => {
    await server?.close();
  });

  const refresh = (clientId: string, refreshToken: string) =>
    tokenRequest(server.issuer, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });

  it(
    'a just-rotated token presented again within the window, its successor unused, gets a new successor; ' + 'the session stays open',
    async () => {
      const { clientId, refreshToken } = await authorise(server);
      const lost = await refresh(clientId, refreshToken);
      expect(lost.status).toBe(200);
      // The client never saw `lost` (a crash, a dropped connection) and presents the old token again.
      const retried = await refresh(clientId, refreshToken);
      expect(retried.status, JSON.stringify(retried.body)).toBe(200);
      expect(retried.body.refresh_token).not.toBe(lost.body.refresh_token);
      expect(retried.body.refresh_token).not.toBe(refreshToken);
      expect(await mcpStatus(server, retried.body.access_token as string)).toBe(200);
      const next = await refresh(clientId, retried.body.refresh_token as string);
      expect(next.status).toBe(200);
      expect(await mcpStatus(server, next.body.access_token as string)).toBe(200);
    },
  );

  it('the successor replaced by a retry is dead: presenting it revokes the session (someone else had it)', async () => {
    const { clientId, refreshToken } = await authorise(server);
    const first = await refresh(clientId, refreshToken);
    const retried = await refresh(clientId, refreshToken);
    expect(retried.status).toBe(200);
    const stale = await refresh(clientId, first.body.refresh_token as string);
    expect(stale.body.error).toBe('invalid_grant');
    expect(await mcpStatus(server, retried.body.access_token as string)).toBe(401);
  });

  it('replay after the successor was used revokes the session', async () => {
    const { clientId, refreshToken } = await authorise(server);
    const rotated = await refresh(clientId, refreshToken);
    const used = await refresh(clientId, rotated.body.refresh_token as string);
    expect(used.status).toBe(200);
    const replay = await refresh(clientId, refreshToken);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    expect(await mcpStatus(server, used.body.access_token as string)).toBe(401);
    expect((await server.store.listSessions()).at(-1)!.revokedReason).toBe('refresh token used twice');
  });

  it('replay after the grace window revokes the session', async () => {
    const { clientId, refreshToken } = await authorise(server);
    const rotated = await refresh(clientId, refreshToken);
    expect(rotated.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    const replay = await refresh(clientId, refreshToken);
    expect(replay.body.error).toBe('invalid_grant');
    expect(await mcpStatus(server, rotated.body.access_token as string)).toBe(401);
  });

  it('rotation is one transaction: when storing the successor fails, the presented token is not retired', async () => {
    const first = await authorise(server);
    const second = await authorise(server);
    // A successor whose hash already exists makes the insert fail inside the transaction (as a crash would
    // interrupt it): retiring the presented token must be rolled back with it.
    await expect(server.store.refreshTokens.rotate(first.refreshToken, second.refreshToken, { graceMs: 1000 })).rejects.toThrow(/UNIQUE/);
    expect((await server.store.refreshTokens.find(first.refreshToken))!.usedAt).toBeNull();
    const refreshed = await refresh(first.clientId, first.refreshToken);
    expect(refreshed.status).toBe(200);
    expect(await mcpStatus(server, refreshed.body.access_token as string)).toBe(200);
  });

  it('rotation records the successor beside the retired token (what the grace rule reads)', async () => {
    const { clientId, refreshToken } = await authorise(server);
    const rotated = await refresh(clientId, refreshToken);
    const rows = server.database
      .prepare(
        'SELECT used_at IS NOT NULL AS used, successor_hash IS NOT NULL AS linked FROM oauth_refresh_tokens WHERE token_hash IN (?, ' +
          '?) ORDER BY created_at, used DESC',
      )
      .all(
        ...[refreshToken, rotated.body.refresh_token as string].map((token) => createHash('sha256').update(token).digest('base64url')),
      ) as Array<{ used: number; linked: number }>;
    expect(rows).toEqual([
      { used: 1, linked: 1 },
      { used: 0, linked: 0 },
    ]);
  });
});

describe('a pending authorization belongs to the browser that opened it', () => {
  let server: TestAuthorizationServer;
  const logLines: string[] = [];
  beforeAll(async () => {
    server = await startAuthorizationServer({ authYaml: 'registration:\n  perIpPerHour: 1000', logLines });
    await new PeopleDirectory(join(server.directory, '.gateway', 'people.json')).add(MALLORY.name, MALLORY.password);
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Browser A (the victim's client) opens /authorize; returns the request id A's pages carry. */
  async function openedInBrowserA(): Promise<{ clientId: string; requestId: string; browserA: Browser }> {
    const registered = await registerClient(server.issuer, { client_name: 'Victim client', redirect_uris: [REDIRECT] });
    const clientId = registered.body.client_id as string;
    const browserA = new Browser();
    const { response, url } = await browserA.follow(
      authorizeUrl(server, { clientId, redirectUri: REDIRECT, challenge: pkce().challenge, method: 'S256' }),
      server.issuer,
    );
    expect(url).toContain('/signin');
    return { clientId, requestId: hiddenField(await response.text(), 'request'), browserA };
  }

  /** Browser B signs in with its own account and its own CSRF token, through a request of its own. */
  async function signedInBrowserB(): Promise<{ browserB: Browser; csrf: string }> {
    const registered = await registerClient(server.issuer, { client_name: 'Attacker client', redirect_uris: [REDIRECT] });
    const browserB = new Browser();
    const signIn = await browserB.follow(
      authorizeUrl(server, {
        clientId: registered.body.client_id as string,
        redirectUri: REDIRECT,
        challenge: pkce().challenge,
        method: 'S256',
      }),
      server.issuer,
    );
    const html = await signIn.response.text();
    const consent = await browserB.follow(`${server.issuer}/signin`, server.issuer, {
      form: {
        csrf_token: hiddenField(html, 'csrf_token'),
        request: hiddenField(html, 'request'),
        name: MALLORY.name,
        password: MALLORY.password,
      },
    });
    expect(consent.url).toContain('/consent');
    return { browserB, csrf: hiddenField(await consent.response.text(), 'csrf_token') };
  }

  it("browser B posting consent for browser A's request (with B's own CSRF token) is refused; no code, no session", async () => {
    const { requestId } = await openedInBrowserA();
    const { browserB, csrf } = await signedInBrowserB();
    const before = (await server.store.listSessions()).length;
    const response = await browserB.request(`${server.issuer}/consent`, {
      form: { csrf_token: csrf, request: requestId, tool: 'search_orders', lifetime: '900', decision: 'allow' },
    });
    expect(response.status).toBe(403);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain('started in another browser');
    expect((await server.store.listSessions()).length).toBe(before);
  });

  it("browser B cannot view, sign in to, or deny browser A's request either", async () => {
    const { requestId, clientId, browserA } = await openedInBrowserA();
    const { browserB, csrf } = await signedInBrowserB();
    for (const path of ['/consent', '/signin']) {
      const view = await browserB.request(`${server.issuer}${path}?request=${encodeURIComponent(requestId)}`);
      expect(view.status, path).toBe(403);
      expect(await view.text(), path).not.toContain(clientId);
    }
    const signIn = await browserB.request(`${server.issuer}/signin`, {
      form: { csrf_token: csrf, request: requestId, name: MALLORY.name, password: MALLORY.password },
    });
    expect(signIn.status).toBe(403);
    const deny = await browserB.request(`${server.issuer}/consent`, { form: { csrf_token: csrf, request: requestId, decision: 'deny' } });
    expect(deny.status).toBe(403);
    expect(deny.headers.get('location')).toBeNull();
    // A browser with no cookie at all is refused the same way.
    expect((await fetch(`${server.issuer}/consent?request=${encodeURIComponent(requestId)}`, { redirect: 'manual' })).status).toBe(403);
    // Browser A itself still completes its request: nothing B did consumed it.
    const html = await (await browserA.request(`${server.issuer}/signin?request=${encodeURIComponent(requestId)}`)).text();
    const consent = await browserA.follow(`${server.issuer}/signin`, server.issuer, {
      form: { csrf_token: hiddenField(html, 'csrf_token'), request: requestId, name: PERSON.name, password: PERSON.password },
    });
    const page = await consent.response.text();
    const decided = await browserA.request(`${server.issuer}/consent`, {
      form: { csrf_token: hiddenField(page, 'csrf_token'), request: requestId, tool: 'search_orders', lifetime: '900', decision: 'allow' },
    });
    expect(decided.status).toBe(303);
    expect(new URL(decided.headers.get('location')!).searchParams.get('code')).toBeTruthy();
  });

  it('request ids, codes and state are not written to info-level logs', async () => {
    logLines.length = 0;
    const { requestId } = await openedInBrowserA();
    const { verifier, challenge } = pkce();
    const registered = await registerClient(server.issuer, { redirect_uris: [REDIRECT] });
    const location = await approve(
      server,
      { clientId: registered.body.client_id as string, redirectUri: REDIRECT, challenge, method: 'S256', state: 'state-secret-42' },
      { tools: ['search_orders'] },
    );
    const code = location.searchParams.get('code')!;
    await tokenRequest(server.issuer, {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: registered.body.client_id as string,
      redirect_uri: REDIRECT,
    });
    const text = logLines.join('\n');
    expect(text).toContain('/consent?request=[redacted]');
    expect(text).not.toContain(requestId);
    expect(text).not.toContain(challenge);
    expect(text).not.toContain('state-secret-42');
    expect(text).not.toContain(code);
  });
});

describe('/authorize cannot be flooded', () => {
  let server: TestAuthorizationServer;
  beforeAll(async () => {
    server = await startAuthorizationServer({
      authYaml: [
        'registration:',
        '  perIpPerHour: 1000',
        'authorize:',
        '  perAddressPerMinute: 100',
        '  perClientPerMinute: 300',
        '  maxPendingPerClient: 50',
        '  maxPending: 120',
      ].join('\n'),
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const FLOOD_CHALLENGE = pkce().challenge;

  async function client(): Promise<string> {
    return (await registerClient(server.issuer, { redirect_uris: [REDIRECT] })).body.client_id as string;
  }

  it("a flood of unauthenticated /authorize gets 429 with Retry-After and evicts no person's request at sign-in or consent", async () => {
    const clientId = await client();
    // Person 1 is at the consent page (signed in); person 2 is at the sign-in page.
    const { verifier, challenge } = pkce();
    const first = new Browser();
    const signIn1 = await first.follow(authorizeUrl(server, { clientId, redirectUri: REDIRECT, challenge, method: 'S256' }), server.issuer);
    const signInHtml = await signIn1.response.text();
    const atConsent = await first.follow(`${server.issuer}/signin`, server.issuer, {
      form: {
        csrf_token: hiddenField(signInHtml, 'csrf_token'),
        request: hiddenField(signInHtml, 'request'),
        name: PERSON.name,
        password: PERSON.password,
      },
    });
    const consentHtml = await atConsent.response.text();
    const second = new Browser();
    const pkce2 = pkce();
    const signIn2 = await second.follow(
      authorizeUrl(server, { clientId, redirectUri: REDIRECT, challenge: pkce2.challenge, method: 'S256' }),
      server.issuer,
    );
    const signIn2Html = await signIn2.response.text();

    // The flood: 1,000 from one address on the same client, then 2,000 from 40 addresses over 4 clients.
    const others = [clientId, await client(), await client(), await client()];
    const statuses = new Map<number, number>();
    const retryAfter: string[] = [];
    const flood = async (remoteAddress: string, floodClient: string): Promise<void> => {
      const target = new URL(
        authorizeUrl(server, { clientId: floodClient, redirectUri: REDIRECT, challenge: FLOOD_CHALLENGE, method: 'S256' }),
      );
      const response = await server.app.inject({ method: 'GET', url: target.pathname + target.search, remoteAddress });
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
      if (response.statusCode === 429) retryAfter.push(String(response.headers['retry-after']));
    };
    for (let index = 0; index < 1_000; index += 1) await flood('127.0.0.1', clientId);
    // 100 per minute from one address (plus what the bucket refills while the loop runs: 100/60 per second).
    expect(statuses.get(303) ?? 0).toBeLessThanOrEqual(110);
    expect(statuses.get(429) ?? 0).toBeGreaterThanOrEqual(890);
    for (let index = 0; index < 2_000; index += 1) await flood(`10.0.0.${index % 40}`, others[index % 4]!);
    expect((statuses.get(303) ?? 0) + (statuses.get(429) ?? 0)).toBe(3_000);
    // At most what the limits let through (a few more for the buckets refilling while the flood runs).
    expect(statuses.get(303) ?? 0).toBeLessThan(100 + 4 * 300 + 50);
    expect(statuses.get(429) ?? 0).toBeGreaterThan(1_500);
    expect(retryAfter.every((value) => /^[1-9]\d*$/.test(value))).toBe(true);

    // Person 1 approves; the code works.
    const decided = await first.request(`${server.issuer}/consent`, {
      form: {
        csrf_token: hiddenField(consentHtml, 'csrf_token'),
        request: hiddenField(consentHtml, 'request'),
        tool: 'search_orders',
        lifetime: '900',
        decision: 'allow',
      },
    });
    expect(decided.status).toBe(303);
    const code = new URL(decided.headers.get('location')!).searchParams.get('code')!;
    const tokens = await tokenRequest(server.issuer, {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: REDIRECT,
    });
    expect(tokens.status).toBe(200);

    // Person 2 signs in and approves too.
    const consent2 = await second.follow(`${server.issuer}/signin`, server.issuer, {
      form: {
        csrf_token: hiddenField(signIn2Html, 'csrf_token'),
        request: hiddenField(signIn2Html, 'request'),
        name: PERSON.name,
        password: PERSON.password,
      },
    });
    expect(consent2.url).toContain('/consent');
    const consent2Html = await consent2.response.text();
    const decided2 = await second.request(`${server.issuer}/consent`, {
      form: {
        csrf_token: hiddenField(consent2Html, 'csrf_token'),
        request: hiddenField(consent2Html, 'request'),
        tool: 'search_orders',
        lifetime: '900',
        decision: 'allow',
      },
    });
    expect(decided2.status).toBe(303);
    const code2 = new URL(decided2.headers.get('location')!).searchParams.get('code')!;
    expect(
      (
        await tokenRequest(server.issuer, {
          grant_type: 'authorization_code',
          code: code2,
          code_verifier: pkce2.verifier,
          client_id: clientId,
          redirect_uri: REDIRECT,
        })
      ).status,
    ).toBe(200);
  });

  it('the per-address limit counts invalid requests too and refuses before any client lookup', async () => {
    const statuses: number[] = [];
    for (let index = 0; index < 100; index += 1) {
      statuses.push(
        (await server.app.inject({ method: 'GET', url: `/authorize?client_id=no-such-client-${index}`, remoteAddress: '192.0.2.7' }))
          .statusCode,
      );
    }
    // Unknown clients are refused on the gateway's page (400) until the address's bucket is empty ...
    expect(statuses.every((status) => status === 400)).toBe(true);
    // ... then even a metadata-document client id is refused at once, without fetching its document.
    const limited = await server.app.inject({
      method: 'GET',
      url: `/authorize?client_id=${encodeURIComponent('https://127.0.0.1:1/client.json')}`,
      remoteAddress: '192.0.2.7',
    });
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.body).toContain('Too many sign-in requests');
  });

  it('an IPv6 client is counted by its /64: a new address in the same /64 does not get a new allowance', async () => {
    const statuses: number[] = [];
    for (let index = 1; index <= 101; index += 1) {
      const remoteAddress = `2001:db8:7:7:${index.toString(16)}::${(index * 7).toString(16)}`;
      statuses.push((await server.app.inject({ method: 'GET', url: '/authorize?client_id=no-such-client', remoteAddress })).statusCode);
    }
    expect(statuses.slice(0, 100).every((status) => status === 400)).toBe(true);
    expect(statuses[100]).toBe(429);
    // Another /64 has its own allowance.
    const elsewhere = await server.app.inject({
      method: 'GET',
      url: '/authorize?client_id=no-such-client',
      remoteAddress: '2001:db8:7:8::1',
    });
    expect(elsewhere.statusCode).toBe(400);
  });
});
