import { join } from 'node:path';
import { PeopleDirectory } from '@gateway/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { SIGNING_KEYS_SECRET } from '../src/authorization/oauth/signing-keys.js';
import {
  approve,
  authorizeUrl,
  Browser,
  hiddenField,
  pkce,
  registerClient,
  startAuthorizationServer,
  tokenRequest,
  type TestAuthorizationServer,
} from './oauth-support/authorization-server.js';

const REDIRECT = 'http://127.0.0.1:9/callback';

let server: TestAuthorizationServer;

beforeAll(async () => {
  server = await startAuthorizationServer({
    authYaml: ['sessions:', '  lifetimeChoicesSeconds: [2, 3600]', 'registration:', '  perIpPerHour: 200'].join('\n'),
  });
});
afterAll(async () => {
  await server?.close();
});

async function nativeClient(redirectUris = [REDIRECT]): Promise<string> {
  const { status, body } = await registerClient(server.issuer, {
    client_name: 'Test CLI',
    redirect_uris: redirectUris,
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
  });
  expect(status).toBe(201);
  return body.client_id as string;
}

async function mcp(token?: string): Promise<{ status: number; body: Record<string, unknown>; challenge: string | null }> {
  const response = await fetch(server.mcpUrl, { method: 'POST', headers: token ? { authorization: `Bearer ${token}` } : {} });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    challenge: response.headers.get('www-authenticate'),
  };
}

/** Registration → consent → code → tokens, for the given tools. */
async function authorise(tools: string[], options: { lifetime?: number; clientId?: string } = {}) {
  const clientId = options.clientId ?? (await nativeClient());
  const { verifier, challenge } = pkce();
  const location = await approve(
    server,
    { clientId, redirectUri: REDIRECT, challenge, method: 'S256' },
    { tools, logins: ['orders/api_key'], ...(options.lifetime ? { lifetime: options.lifetime } : {}) },
  );
  const code = location.searchParams.get('code')!;
  expect(code).toBeTruthy();
  const tokens = await tokenRequest(server.issuer, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: REDIRECT,
    resource: server.mcpUrl,
  });
  return { clientId, code, verifier, location, tokens };
}

async function signingKey(): Promise<{ jwk: JWK; kid: string }> {
  const stored = JSON.parse((await server.vault.get(SIGNING_KEYS_SECRET))!) as { keys: Array<{ kid: string; privateJwk: JWK }> };
  return { jwk: stored.keys[0]!.privateJwk, kid: stored.keys[0]!.kid };
}

async function tokenWith(claims: Record<string, unknown>, options: { key?: CryptoKey; kid?: string; typ?: string } = {}): Promise<string> {
  const real = await signingKey();
  const key = options.key ?? ((await importJWK(real.jwk, 'EdDSA')) as CryptoKey);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ client_id: 'x', sid: 'session-1', jti: 'j', ...claims })
    .setProtectedHeader({ alg: 'EdDSA', typ: options.typ ?? 'at+jwt', kid: options.kid ?? real.kid })
    .setIssuer((claims.iss as string) ?? server.issuer)
    .setAudience((claims.aud as string) ?? server.mcpUrl)
    .setSubject('local:alice')
    .setIssuedAt(now)
    .setExpirationTime((claims.exp as number) ?? now + 300)
    .sign(key);
}

describe('discovery', () => {
  it('an /mcp request without a token gets 401 with WWW-Authenticate naming the resource metadata', async () => {
    const answer = await mcp();
    expect(answer.status).toBe(401);
    expect(answer.challenge).toBe(`Bearer resource_metadata="${server.issuer}/.well-known/oauth-protected-resource/mcp"`);
  });

  it('protected resource metadata is served at the path-inserted and root URLs with resource equal to the /mcp URL', async () => {
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const response = await fetch(`${server.issuer}${path}`);
      expect(response.status).toBe(200);
      const body = (await response.json()) as Record<string, unknown>;
      expect(body.resource).toBe(server.mcpUrl);
      expect(body.authorization_servers).toEqual([server.issuer]);
    }
  });

  it('authorization server metadata (RFC 8414 and OIDC paths) advertises S256, metadata documents and iss', async () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const body = (await (await fetch(`${server.issuer}${path}`)).json()) as Record<string, unknown>;
      expect(body.issuer).toBe(server.issuer);
      expect(body.code_challenge_methods_supported).toEqual(['S256']);
      expect(body.client_id_metadata_document_supported).toBe(true);
      expect(body.authorization_response_iss_parameter_supported).toBe(true);
      expect(body.response_types_supported).toEqual(['code']);
      expect(body.grant_types_supported).toEqual(['authorization_code', 'refresh_token']);
      expect(body.token_endpoint_auth_methods_supported).toEqual(['none', 'client_secret_basic', 'client_secret_post']);
      expect(body.registration_endpoint).toBe(`${server.issuer}/oauth/register`);
      expect(body.revocation_endpoint).toBe(`${server.issuer}/oauth/revoke`);
      expect(body.scopes_supported ?? []).not.toContain('offline_access');
    }
  });

  it('the JWKS publishes the vault key by its kid, public part only', async () => {
    const body = (await (await fetch(`${server.issuer}/oauth/jwks.json`)).json()) as { keys: JWK[] };
    const { kid } = await signingKey();
    expect(body.keys.map((key) => key.kid)).toContain(kid);
    expect(body.keys.every((key) => key.d === undefined)).toBe(true);
  });
});

describe('dynamic client registration', () => {
  it('a web application may not register a loopback http redirect URI', async () => {
    const { status, body } = await registerClient(server.issuer, {
      client_name: 'Web',
      application_type: 'web',
      redirect_uris: ['http://127.0.0.1:3000/cb'],
    });
    expect(status).toBe(400);
    expect(body.error).toBe('invalid_redirect_uri');
  });

  it('native applications may register loopback http and private-use schemes; other schemes are refused', async () => {
    expect(
      (
        await registerClient(server.issuer, {
          application_type: 'native',
          redirect_uris: ['http://127.0.0.1/cb', 'com.example.app:/oauth'],
        })
      ).status,
    ).toBe(201);
    expect((await registerClient(server.issuer, { redirect_uris: ['javascript:alert(1)'] })).body.error).toBe('invalid_redirect_uri');
    expect((await registerClient(server.issuer, { redirect_uris: ['http://example.com/cb'] })).body.error).toBe('invalid_redirect_uri');
    expect((await registerClient(server.issuer, { redirect_uris: ['https://app.example.com/cb#frag'] })).body.error).toBe(
      'invalid_redirect_uri',
    );
  });

  it('a confidential registration gets a secret that authenticates at the token endpoint', async () => {
    const { body } = await registerClient(server.issuer, {
      redirect_uris: ['https://app.example.com/cb'],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(typeof body.client_secret).toBe('string');
    const wrong = await tokenRequest(
      server.issuer,
      { grant_type: 'authorization_code', code: 'x' },
      { authorization: `Basic ${Buffer.from(`${body.client_id as string}:wrong`).toString('base64')}` },
    );
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_client');
    const right = await tokenRequest(
      server.issuer,
      { grant_type: 'authorization_code', code: 'x' },
      { authorization: `Basic ${Buffer.from(`${body.client_id as string}:${body.client_secret as string}`).toString('base64')}` },
    );
    expect(right.body.error).toBe('invalid_grant');
  });
});

describe('/authorize refusals', () => {
  let clientId: string;
  beforeAll(async () => {
    clientId = await nativeClient();
  });

  async function authorize(input: Parameters<typeof authorizeUrl>[1]): Promise<Response> {
    return fetch(authorizeUrl(server, input), { redirect: 'manual' });
  }

  function redirectedError(response: Response): URLSearchParams {
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get('location')!);
    expect(location.origin + location.pathname).toBe(REDIRECT);
    return location.searchParams;
  }

  it('a wrong resource is refused with invalid_target, carrying state and iss', async () => {
    const params = redirectedError(
      await authorize({
        clientId,
        redirectUri: REDIRECT,
        challenge: pkce().challenge,
        method: 'S256',
        resource: 'https://evil.example/mcp',
      }),
    );
    expect(params.get('error')).toBe('invalid_target');
    expect(params.get('state')).toBe('state-123');
    expect(params.get('iss')).toBe(server.issuer);
  });

  it('a missing resource is refused with invalid_target', async () => {
    const params = redirectedError(
      await authorize({ clientId, redirectUri: REDIRECT, challenge: pkce().challenge, method: 'S256', resource: null }),
    );
    expect(params.get('error')).toBe('invalid_target');
  });

  it('a request without PKCE is refused with invalid_request', async () => {
    const params = redirectedError(await authorize({ clientId, redirectUri: REDIRECT }));
    expect(params.get('error')).toBe('invalid_request');
    expect(params.get('iss')).toBe(server.issuer);
  });

  it('PKCE plain is refused with invalid_request', async () => {
    const { verifier } = pkce();
    const params = redirectedError(await authorize({ clientId, redirectUri: REDIRECT, challenge: verifier, method: 'plain' }));
    expect(params.get('error')).toBe('invalid_request');
  });

  it('a redirect URI that was not registered gets the gateway error page, never a redirect', async () => {
    const response = await authorize({
      clientId,
      redirectUri: 'http://127.0.0.1:9/elsewhere',
      challenge: pkce().challenge,
      method: 'S256',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain('not one of its registered addresses');
  });

  it('an unknown client gets the gateway error page, never a redirect', async () => {
    const response = await authorize({ clientId: 'no-such-client', redirectUri: REDIRECT, challenge: pkce().challenge, method: 'S256' });
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });

  it('a loopback redirect URI matches with any port (RFC 8252 §7.3), but not another path', async () => {
    const portless = await nativeClient(['http://127.0.0.1/callback']);
    const ok = await authorize({
      clientId: portless,
      redirectUri: 'http://127.0.0.1:54321/callback',
      challenge: pkce().challenge,
      method: 'S256',
    });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toMatch(/\/consent\?request=/);
    const wrongPath = await authorize({
      clientId: portless,
      redirectUri: 'http://127.0.0.1:54321/callbackx',
      challenge: pkce().challenge,
      method: 'S256',
    });
    expect(wrongPath.status).toBe(400);
  });
});

describe('sign-in and consent', () => {
  /** A new client's sign-in page, reached through /authorize in a browser of its own. */
  async function signInPage(): Promise<{ browser: Browser; response: Response; html: string }> {
    const clientId = await nativeClient();
    const browser = new Browser();
    const { response } = await browser.follow(
      authorizeUrl(server, { clientId, redirectUri: REDIRECT, challenge: pkce().challenge, method: 'S256' }),
      server.issuer,
    );
    return { browser, response, html: await response.text() };
  }

  it('the consent POST without the CSRF token is refused and opens no session', async () => {
    const before = (await server.store.listSessions()).length;
    const { browser, html } = await signInPage();
    const consent = await browser.follow(`${server.issuer}/signin`, server.issuer, {
      form: {
        csrf_token: hiddenField(html, 'csrf_token'),
        request: hiddenField(html, 'request'),
        name: 'alice',
        password: 'correct horse battery staple',
      },
    });
    expect(consent.url).toContain('/consent');
    const page = await consent.response.text();
    const response = await browser.request(`${server.issuer}/consent`, {
      form: { request: hiddenField(page, 'request'), tool: 'search_orders', lifetime: '3600', decision: 'allow' },
    });
    expect(response.status).toBe(403);
    expect((await server.store.listSessions()).length).toBe(before);
  });

  it('the consent page forbids framing and external assets (CSP)', async () => {
    const { response } = await signInPage();
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    expect(response.headers.get('x-frame-options')).toBe('DENY');
  });

  it('denying redirects with access_denied, state and iss, and opens no session', async () => {
    const clientId = await nativeClient();
    const before = (await server.store.listSessions()).length;
    const location = await approve(
      server,
      { clientId, redirectUri: REDIRECT, challenge: pkce().challenge, method: 'S256' },
      { tools: [], decision: 'deny' },
    );
    expect(location.searchParams.get('error')).toBe('access_denied');
    expect(location.searchParams.get('state')).toBe('state-123');
    expect(location.searchParams.get('iss')).toBe(server.issuer);
    expect((await server.store.listSessions()).length).toBe(before);
  });

  it('repeated wrong passwords are throttled', async () => {
    const page = await signInPage();
    const { browser } = page;
    let { html } = page;
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 6; attempt += 1) {
      const response = await browser.request(`${server.issuer}/signin`, {
        form: {
          csrf_token: hiddenField(html, 'csrf_token'),
          request: hiddenField(html, 'request'),
          name: 'mallory-target',
          password: `guess-number-${attempt}`,
        },
      });
      statuses.push(response.status);
      html = await response.text();
    }
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses[5]).toBe(429);
  });

  it('wrong passwords sent all at once still get only the limit of checks; the right password is then refused too', async () => {
    const { browser, html } = await signInPage();
    // An account of its own: the other tests sign in as PERSON.
    const victim = { name: 'victor', password: 'a long and right password' };
    await new PeopleDirectory(join(server.directory, '.gateway', 'people.json')).add(victim.name, victim.password);
    const form = (password: string) => ({
      csrf_token: hiddenField(html, 'csrf_token'),
      request: hiddenField(html, 'request'),
      name: victim.name,
      password,
    });
    // Twenty guesses in parallel: each holds a place as it starts, before its (slow, scrypt) password check.
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, index) => browser.request(`${server.issuer}/signin`, { form: form(`guess-${index}`) })),
    ).then((responses) => responses.map((response) => response.status));
    expect(statuses.filter((status) => status === 401)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(15);
    const right = await browser.request(`${server.issuer}/signin`, { form: form(victim.password) });
    expect(right.status).toBe(429);
    expect(right.headers.get('retry-after')).toMatch(/^\d+$/);
  });
});

describe('tokens and sessions', () => {
  it('the approved session holds exactly the chosen tools with the fingerprints shown, and the login', async () => {
    const { tokens, location } = await authorise(['search_orders', 'get_order']);
    expect(location.searchParams.get('iss')).toBe(server.issuer);
    expect(location.searchParams.get('state')).toBe('state-123');
    expect(tokens.status).toBe(200);
    expect(tokens.headers.get('cache-control')).toBe('no-store');
    expect(tokens.body.token_type).toBe('Bearer');
    const answer = await mcp(tokens.body.access_token as string);
    expect(answer.status).toBe(200);
    expect(answer.body.tools).toEqual({ get_order: 'sha256:bbb', search_orders: 'sha256:aaa' });
    expect(answer.body.logins).toEqual(['orders/api_key']);
    expect(answer.body.sessionId).toMatch(/^session-\d+$/);
  });

  it('the access token is an RFC 9068 JWT bound to the /mcp audience', async () => {
    const { tokens } = await authorise(['search_orders']);
    const [header, payload] = (tokens.body.access_token as string)
      .split('.')
      .slice(0, 2)
      .map((part) => JSON.parse(Buffer.from(part, 'base64url').toString()));
    expect(header.typ).toBe('at+jwt');
    expect(header.kid).toBe((await signingKey()).kid);
    expect(payload.aud).toBe(server.mcpUrl);
    expect(payload.iss).toBe(server.issuer);
    expect(payload.sub).toBe('local:alice');
    expect(payload.sid).toMatch(/^session-/);
    expect(typeof payload.client_id).toBe('string');
    expect(payload.exp - payload.iat).toBeLessThanOrEqual(600);
  });

  it('a reused authorization code is refused and revokes the tokens it produced', async () => {
    const { code, verifier, clientId, tokens } = await authorise(['search_orders']);
    expect((await mcp(tokens.body.access_token as string)).status).toBe(200);
    const again = await tokenRequest(server.issuer, {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: REDIRECT,
    });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
    const after = await mcp(tokens.body.access_token as string);
    expect(after.status).toBe(401);
    expect(after.challenge).toContain('error="invalid_token"');
    const refreshed = await tokenRequest(server.issuer, {
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token as string,
      client_id: clientId,
    });
    expect(refreshed.body.error).toBe('invalid_grant');
  });

  it(
    'the re-approval challenge is 403 insufficient_scope naming tools:<name>; afterwards the session refresh is refused and its access ' +
      'token still works',
    async () => {
      const { clientId, tokens } = await authorise(['search_orders', 'get_order']);
      const authenticated = await server.authorization.authorizer.authenticate({
        headers: { authorization: `Bearer ${tokens.body.access_token as string}` },
      });
      if (!authenticated.ok) throw new Error('the fresh token was refused');
      const challenge = await server.authorization.authorizer.challengeStaleApproval!(authenticated.caller, ['search_orders']);
      expect(challenge.status).toBe(403);
      const header = challenge.headers['WWW-Authenticate']!;
      expect(header).toMatch(/^Bearer /);
      expect(header).toContain('error="insufficient_scope"');
      expect(header).toContain('scope="tools:search_orders"');
      expect(header).toContain(`resource_metadata="${server.issuer}/.well-known/oauth-protected-resource/mcp"`);
      expect((await server.store.session(authenticated.caller.sessionId))!.reapprovalTools).toEqual(['search_orders']);
      const refreshed = await tokenRequest(server.issuer, {
        grant_type: 'refresh_token',
        refresh_token: tokens.body.refresh_token as string,
        client_id: clientId,
      });
      expect(refreshed.status).toBe(400);
      expect(refreshed.body.error).toBe('invalid_grant');
      expect(String(refreshed.body.error_description)).toContain('search_orders');
      expect((await mcp(tokens.body.access_token as string)).status).toBe(200);
    },
  );

  it('a wrong code_verifier, a wrong redirect_uri or a wrong resource at the token endpoint is refused', async () => {
    for (const [change, error] of [
      [{ code_verifier: pkce().verifier }, 'invalid_grant'],
      [{ redirect_uri: 'http://127.0.0.1:9/other' }, 'invalid_grant'],
      [{ resource: 'https://elsewhere.example/mcp' }, 'invalid_target'],
      [{ code_verifier: '' }, 'invalid_grant'],
    ] as const) {
      const clientId = await nativeClient();
      const { verifier, challenge } = pkce();
      const location = await approve(server, { clientId, redirectUri: REDIRECT, challenge, method: 'S256' }, { tools: ['get_order'] });
      const form: Record<string, string> = Object.assign(
        {
          grant_type: 'authorization_code',
          code: location.searchParams.get('code')!,
          code_verifier: verifier,
          client_id: clientId,
          redirect_uri: REDIRECT,
        },
        change,
      );
      if (form.code_verifier === '') delete form.code_verifier;
      const answer = await tokenRequest(server.issuer, form);
      expect(answer.status, JSON.stringify(change)).toBe(400);
      expect(answer.body.error, JSON.stringify(change)).toBe(error);
    }
  });

  it('refresh tokens rotate; replaying an old one after its successor was used revokes the session', async () => {
    const { tokens, clientId } = await authorise(['search_orders']);
    const first = tokens.body.refresh_token as string;
    const rotated = await tokenRequest(server.issuer, {
      grant_type: 'refresh_token',
      refresh_token: first,
      client_id: clientId,
      resource: server.mcpUrl,
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.refresh_token).not.toBe(first);
    expect((await mcp(rotated.body.access_token as string)).status).toBe(200);
    const again = await tokenRequest(server.issuer, {
      grant_type: 'refresh_token',
      refresh_token: rotated.body.refresh_token as string,
      client_id: clientId,
    });
    expect(again.status).toBe(200);
    const replay = await tokenRequest(server.issuer, { grant_type: 'refresh_token', refresh_token: first, client_id: clientId });
    expect(replay.body.error).toBe('invalid_grant');
    expect((await mcp(again.body.access_token as string)).status).toBe(401);
    const next = await tokenRequest(server.issuer, {
      grant_type: 'refresh_token',
      refresh_token: again.body.refresh_token as string,
      client_id: clientId,
    });
    expect(next.body.error).toBe('invalid_grant');
  });

  it('a revoked session refuses its tokens at once (revocation endpoint, RFC 7009)', async () => {
    const { tokens, clientId } = await authorise(['search_orders']);
    const response = await fetch(`${server.issuer}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.body.refresh_token as string, client_id: clientId }).toString(),
    });
    expect(response.status).toBe(200);
    const answer = await mcp(tokens.body.access_token as string);
    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe('invalid_token');
  });

  it('a session revoked in the store (as `gateway sessions revoke` does) is refused on the next request', async () => {
    const { tokens } = await authorise(['search_orders']);
    const answer = await mcp(tokens.body.access_token as string);
    await server.store.revokeSession(answer.body.sessionId as string, 'test');
    expect((await mcp(tokens.body.access_token as string)).status).toBe(401);
  });

  it('after the time limit the access token and the refresh token stop working', async () => {
    const { tokens, clientId } = await authorise(['search_orders'], { lifetime: 2 });
    const payload = JSON.parse(Buffer.from((tokens.body.access_token as string).split('.')[1]!, 'base64url').toString());
    expect(payload.exp - payload.iat).toBeLessThanOrEqual(2);
    expect((await mcp(tokens.body.access_token as string)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 2_300));
    const answer = await mcp(tokens.body.access_token as string);
    expect(answer.status).toBe(401);
    expect(answer.challenge).toContain('error="invalid_token"');
    const refreshed = await tokenRequest(server.issuer, {
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token as string,
      client_id: clientId,
    });
    expect(refreshed.body.error).toBe('invalid_grant');
  });
});

describe('token verification on /mcp', () => {
  it('an expired token is refused with invalid_token', async () => {
    const answer = await mcp(await tokenWith({ exp: Math.floor(Date.now() / 1000) - 60 }));
    expect(answer.status).toBe(401);
    expect(answer.challenge).toContain('error="invalid_token"');
    expect(answer.challenge).toContain('expired');
  });

  it('a forged token (signed by another key under our kid) is refused', async () => {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const answer = await mcp(await tokenWith({}, { key: privateKey as CryptoKey }));
    expect(answer.status).toBe(401);
    expect(answer.challenge).toContain('signature');
  });

  it('a token from another issuer is refused', async () => {
    const answer = await mcp(await tokenWith({ iss: 'https://other-issuer.example' }));
    expect(answer.status).toBe(401);
    expect(answer.challenge).toContain('another authorization server');
  });

  it('a token for another audience is refused', async () => {
    const answer = await mcp(await tokenWith({ aud: 'https://other.example/mcp' }));
    expect(answer.status).toBe(401);
    expect(answer.challenge).toContain('not meant for this resource');
  });

  it('a token without typ at+jwt is refused', async () => {
    const answer = await mcp(await tokenWith({}, { typ: 'JWT' }));
    expect(answer.status).toBe(401);
  });

  it('a token in the query string is ignored (header only)', async () => {
    const token = await tokenWith({});
    const response = await fetch(`${server.mcpUrl}?access_token=${token}`, { method: 'POST' });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).not.toContain('error=');
  });
});
