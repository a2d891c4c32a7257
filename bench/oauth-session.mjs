// A real session for the bench, obtained the way an MCP client and a person get one, over plain HTTP and
// without a browser: Dynamic Client Registration (RFC 7591) → /authorize with PKCE S256 and `resource`
// (RFC 8707) → the sign-in form (with its CSRF token) → the consent form (tools, logins, time limit) →
// the token endpoint. Mirrors `approve()` in packages/server/test/oauth-support (which bench must not
// import: it pulls in the test harness).
import { createHash, randomBytes } from 'node:crypto';

/** A cookie jar and manual redirects: the least a browser does for a form-based sign-in. */
class FormClient {
  #cookies = new Map();

  async request(url, { form } = {}) {
    const headers = {};
    if (this.#cookies.size > 0) headers.cookie = [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    let body;
    if (form) {
      const encoded = new URLSearchParams();
      for (const [name, value] of Object.entries(form))
        for (const item of Array.isArray(value) ? value : [value]) encoded.append(name, item);
      body = encoded.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const response = await fetch(url, { method: body ? 'POST' : 'GET', headers, body, redirect: 'manual' });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const separator = pair.indexOf('=');
      const name = pair.slice(0, separator);
      if (/max-age=0/i.test(cookie)) this.#cookies.delete(name);
      else this.#cookies.set(name, pair.slice(separator + 1));
    }
    return response;
  }

  /** Follows redirects that stay on `origin`; returns the first answer that is not one. */
  async follow(url, origin, init) {
    let current = url;
    let response = await this.request(current, init);
    for (let hop = 0; hop < 10 && response.status >= 300 && response.status < 400; hop += 1) {
      const next = new URL(response.headers.get('location'), current).href;
      if (!next.startsWith(origin)) break;
      current = next;
      response = await this.request(current);
    }
    return { response, url: current };
  }
}

function hiddenField(html, name) {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!match) throw new Error(`no hidden field ${name} in the page: ${html.slice(0, 300)}`);
  return match[1].replace(/&#(\d+);/g, (_all, code) => String.fromCharCode(Number(code)));
}

async function expectStatus(response, status, step) {
  if (response.status !== status)
    throw new Error(`${step}: expected HTTP ${status}, got ${response.status}: ${(await response.text()).slice(0, 400)}`);
}

/**
 * Signs `person` in and approves `tools` and `logins` for `lifetimeSeconds`; returns the access token.
 * `issuer` is gateway.url; `mcpUrl` the canonical /mcp URL (the RFC 8707 resource).
 */
export async function obtainAccessToken({ issuer, mcpUrl, person, password, tools, logins = [], lifetimeSeconds }) {
  const redirectUri = 'http://127.0.0.1:9/callback'; // RFC 8252 loopback redirect: never followed here
  const registration = await fetch(`${issuer}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'gateway bench',
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
    }),
  });
  await expectStatus(registration.clone(), 201, 'dynamic client registration');
  const clientId = (await registration.json()).client_id;

  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL(`${issuer}/authorize`);
  for (const [name, value] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    resource: mcpUrl,
    state: randomBytes(8).toString('hex'),
  })) {
    authorize.searchParams.set(name, value);
  }

  const browser = new FormClient();
  let { response, url } = await browser.follow(authorize.href, issuer);
  if (!url.includes('/signin')) throw new Error(`expected the sign-in page, got ${url} (${response.status})`);
  let html = await response.text();
  ({ response, url } = await browser.follow(`${issuer}/signin`, issuer, {
    form: { csrf_token: hiddenField(html, 'csrf_token'), request: hiddenField(html, 'request'), name: person, password },
  }));
  if (!url.includes('/consent'))
    throw new Error(`expected the consent page after sign-in, got ${url} (${response.status}): ${(await response.text()).slice(0, 300)}`);
  html = await response.text();
  const decided = await browser.request(`${issuer}/consent`, {
    form: {
      csrf_token: hiddenField(html, 'csrf_token'),
      request: hiddenField(html, 'request'),
      tool: tools,
      login: logins,
      lifetime: String(lifetimeSeconds),
      decision: 'allow',
    },
  });
  await expectStatus(decided.clone(), 303, 'consent');
  const code = new URL(decided.headers.get('location')).searchParams.get('code');
  if (!code) throw new Error(`consent did not return a code: ${decided.headers.get('location')}`);

  const token = await fetch(`${issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: redirectUri,
      resource: mcpUrl,
    }).toString(),
  });
  await expectStatus(token.clone(), 200, 'token endpoint');
  const body = await token.json();
  return { accessToken: body.access_token, expiresIn: body.expires_in, clientId };
}
