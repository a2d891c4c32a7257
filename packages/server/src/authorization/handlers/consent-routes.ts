import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '@gateway/core';
import type { ConsentOffer, ConsentTool } from '../consent/consent-tool.js';
import { findRedirectUri, OAuthProblem, type ClientRegistry, type OAuthClient } from '../oauth/clients.js';
import { addFormParser, formOf, queryOf, repeatedParameter } from '../oauth/http.js';
import { isLocalhostOnly, redirectDisplayHost } from '../oauth/redirect-uris.js';
import type { AuthSettings } from '../oauth/settings.js';
import type { PeopleDirectory } from '@gateway/runtime';
import { SignInThrottle, type BrowserSession, type BrowserSessions } from '../signin/browser-sessions.js';
import type { OidcSignIn } from '../signin/oidc.js';
import { randomToken, type SessionStore } from '../stores/session-store.js';
import { TOOL_SCOPE_PREFIX } from '../consent/reapproval.js';
import { consentPage, errorPage, lifetimeLabel, signInPage, type RenderedPage } from '../consent/pages.js';
import { RateLimiter } from '../oauth/rate-limit.js';
import { PendingAuthorizations, type PendingAuthorization } from '../consent/pending.js';
import type { SharedEphemeralStore } from '../../store/shared-state.js';

export interface ConsentRoutesOptions {
  settings: AuthSettings;
  /** The tools and logins on offer, and where the pages log. */
  context: ConsentOffer & { logger: FastifyBaseLogger };
  clients: ClientRegistry;
  store: SessionStore;
  people: PeopleDirectory;
  browserSessions: BrowserSessions;
  oidc?: OidcSignIn;
  /** Workers share pending requests through the database (`gateway serve --workers N`). */
  sharedPending?: SharedEphemeralStore;
}

/** RFC 7636 §4.2: BASE64URL(SHA256(verifier)) is exactly 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9\-_]{43}$/;

function send(reply: FastifyReply, page: RenderedPage): FastifyReply {
  return reply.status(page.status).headers(page.headers).send(page.html);
}

/** Where a form submitted on the consent page may end up (CSP form-action): the redirect's origin or scheme. */
function formTargetOf(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

/** The tool names an authorization request's `scope` asks for (`tools:<name>`); other scope values are ignored (RFC 6749 §3.3). */
export function toolsInScope(scope: string | null): string[] {
  if (!scope) return [];
  const names = new Set<string>();
  for (const token of scope.split(' ')) if (token.startsWith(TOOL_SCOPE_PREFIX) && token.length > TOOL_SCOPE_PREFIX.length) names.add(token.slice(TOOL_SCOPE_PREFIX.length));
  return [...names].slice(0, 1000);
}

/**
 * Adds the logins the chosen tools need (docs/authorization.md › Logins): a tool that can use exactly
 * one login gets it ticked; a tool with several alternatives, none of them ticked, is a problem the person
 * must settle (the gateway does not pick a credential for them). Tools without logins need none.
 */
export function completeLogins(chosen: readonly ConsentTool[], ticked: readonly string[]): { logins: string[] } | { problem: string } {
  const logins = new Set(ticked);
  for (const tool of chosen) {
    if (tool.logins.length === 0 || tool.logins.some((login) => logins.has(login))) continue;
    if (tool.logins.length === 1) {
      logins.add(tool.logins[0]!);
      continue;
    }
    return { problem: `The tool ${tool.name} can use the login ${tool.logins.join(' or ')}: tick the one it should use.` };
  }
  return { logins: [...logins].sort() };
}

export function registerConsentRoutes(instance: FastifyInstance, options: ConsentRoutesOptions): void {
  const { settings, context, clients, store, people, browserSessions, oidc, sharedPending } = options;
  const base = settings.basePath;
  const limits = settings.authorize;
  const pending = new PendingAuthorizations(settings.pendingRequestSeconds, { maxRequests: limits.maxPending, maxPerClient: limits.maxPendingPerClient }, sharedPending);
  // Issue 15: /authorize is unauthenticated and each request holds memory for minutes; both limits apply.
  const perAddress = new RateLimiter(limits.perAddressPerMinute);
  const perClient = new RateLimiter(limits.perClientPerMinute);
  const throttle = new SignInThrottle(settings.maxFailedAttempts, settings.lockoutSeconds);
  const oidcCallback = `${settings.issuer}/signin/oidc/callback`;
  addFormParser(instance);

  /** RFC 9207 §2: every authorization response, success or error, names the issuer. */
  function redirectBack(reply: FastifyReply, request: PendingAuthorization | { redirectUri: string; state: string | null }, parameters: Record<string, string>): FastifyReply {
    const target = new URL(request.redirectUri);
    for (const [name, value] of Object.entries(parameters)) target.searchParams.set(name, value);
    if (request.state !== null) target.searchParams.set('state', request.state);
    target.searchParams.set('iss', settings.issuer);
    // RFC 9700 §4.12: 303 after a POST, so the browser does not re-send the form to the client.
    return reply.status(303).header('cache-control', 'no-store').header('location', target.href).send();
  }

  function session(request: FastifyRequest): BrowserSession | undefined {
    return browserSessions.find(request.headers.cookie);
  }

  function ensureSession(request: FastifyRequest, reply: FastifyReply): BrowserSession {
    const existing = session(request);
    if (existing) return existing;
    const created = browserSessions.create();
    reply.header('set-cookie', browserSessions.setCookieHeader(created));
    return created;
  }

  function tooManyRequests(reply: FastifyReply, seconds: number, why: string): FastifyReply {
    reply.header('retry-after', String(seconds));
    return send(reply, errorPage('Too many sign-in requests', `${why} Try again in ${seconds} second(s).`, 429));
  }

  /**
   * The pending request named by `id`, continued by the browser that started it; a page to show when it
   * has expired or another browser (another cookie jar) tries to continue it.
   */
  function ownRequest(request: FastifyRequest, id: string | null | undefined): { pendingRequest: PendingAuthorization; browser: BrowserSession } | { page: RenderedPage } {
    const pendingRequest = pending.find(id);
    if (!pendingRequest) return { page: expiredPage() };
    const browser = session(request);
    if (!browser || browser.browserId !== pendingRequest.browserId) {
      return {
        page: errorPage(
          'This request belongs to another browser',
          'This sign-in request was started in another browser or window profile, so it cannot be continued here. Nothing was approved. Start again from the application, in this browser.',
          403,
        ),
      };
    }
    return { pendingRequest, browser };
  }

  const consentUrl = (id: string): string => `${base}/consent?request=${encodeURIComponent(id)}`;
  const signInUrl = (id: string): string => `${base}/signin?request=${encodeURIComponent(id)}`;

  // ---- /authorize (OAuth 2.1 §4.1.1) ----
  instance.get(`${base}/authorize`, async (request, reply) => {
    const addressWait = perAddress.take(request.ip);
    if (addressWait > 0) return tooManyRequests(reply, addressWait, 'This address has started too many sign-in requests.');
    const query = queryOf(request);
    // Until client and redirect URI are verified, problems are shown here and never redirected (RFC 9700 §4.11).
    const unsafe = repeatedParameter(query, ['client_id', 'redirect_uri']);
    if (unsafe) return send(reply, errorPage('This sign-in request is invalid', `The parameter ${unsafe} was sent more than once.`));
    const clientId = query.get('client_id');
    if (!clientId) return send(reply, errorPage('This sign-in request is invalid', 'The application did not say who it is (client_id is missing).'));
    let client: OAuthClient;
    try {
      client = await clients.find(clientId);
    } catch (error) {
      if (error instanceof OAuthProblem) {
        return send(reply, errorPage('Unknown application', `This gateway cannot verify the application: ${error.description}`));
      }
      throw error;
    }
    const requestedRedirect = query.get('redirect_uri') ?? undefined;
    const redirectUri = findRedirectUri(client, requestedRedirect);
    if (!redirectUri) {
      return send(
        reply,
        errorPage(
          'Unregistered return address',
          requestedRedirect === undefined
            ? 'The application did not say where to return (redirect_uri), and it has several registered addresses.'
            : `The application asked to return to ${requestedRedirect}, which is not one of its registered addresses. For your safety you were not sent there.`,
        ),
      );
    }
    const state = query.get('state');
    const fail = (error: string, description: string): FastifyReply => redirectBack(reply, { redirectUri, state }, { error, error_description: description });
    const repeated = repeatedParameter(query, ['response_type', 'state', 'code_challenge', 'code_challenge_method', 'resource', 'scope']);
    if (repeated) return fail('invalid_request', `${repeated} was sent more than once`);
    if (query.get('response_type') !== 'code') return fail('unsupported_response_type', 'only response_type=code is supported');
    const challenge = query.get('code_challenge');
    const method = query.get('code_challenge_method');
    // OAuth 2.1 §4.1.1 / RFC 9700 §2.1.1: PKCE is required and only S256 is accepted (a missing method means plain).
    if (!challenge) return fail('invalid_request', 'code_challenge is required (PKCE S256)');
    if (method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256');
    if (!S256_CHALLENGE.test(challenge)) return fail('invalid_request', 'code_challenge is not a base64url SHA-256 value');
    // RFC 8707 + MCP › Resource Parameter: the token is for this gateway's /mcp and nothing else.
    const resource = query.get('resource');
    if (resource === null) return fail('invalid_target', `resource is required and must be ${settings.mcpUrl}`);
    if (resource !== settings.mcpUrl) return fail('invalid_target', `resource must be ${settings.mcpUrl}`);
    const clientWait = perClient.take(client.clientId);
    if (clientWait > 0) return tooManyRequests(reply, clientWait, 'This application has started too many sign-in requests.');
    const browser = ensureSession(request, reply);
    const added = pending.add({
      client,
      redirectUri,
      redirectUriParameter: requestedRedirect ?? '',
      state,
      codeChallenge: challenge,
      resource,
      browserId: browser.browserId,
      requestedTools: toolsInScope(query.get('scope')),
    });
    if (typeof added === 'string') {
      // Every held request is one a person is working on: refuse rather than end theirs.
      return tooManyRequests(reply, 60, added === 'client-full' ? 'This application has too many sign-in requests in progress.' : 'The gateway has too many sign-in requests in progress.');
    }
    return reply.status(303).header('cache-control', 'no-store').header('location', consentUrl(added.id)).send();
  });

  function expiredPage(): RenderedPage {
    return errorPage('This request has expired', 'Start again from the application that sent you here.', 400);
  }

  function signInFor(browser: BrowserSession, reply: FastifyReply, pendingRequest: PendingAuthorization, extra: { error?: string; name?: string; status?: number } = {}): FastifyReply {
    return send(
      reply,
      signInPage({
        requestId: pendingRequest.id,
        csrfToken: browser.csrfToken,
        gateway: settings.issuer,
        clientName: pendingRequest.client.name,
        localAccounts: settings.localAccountsEnabled,
        ...(oidc ? { oidc: { label: oidc.label, href: `${base}/signin/oidc?request=${encodeURIComponent(pendingRequest.id)}` } } : {}),
        ...extra,
      }),
    );
  }

  // ---- sign-in with a local account ----
  instance.get(`${base}/signin`, async (request, reply) => {
    const own = ownRequest(request, queryOf(request).get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest, browser } = own;
    pendingRequest.isEngaged = true;
    pending.save(pendingRequest);
    if (browser.person) return reply.status(303).header('location', consentUrl(pendingRequest.id)).send();
    return signInFor(browser, reply, pendingRequest);
  });

  instance.post(`${base}/signin`, async (request, reply) => {
    const form = formOf(request);
    const browser = session(request);
    if (!browserSessions.isCsrfTokenValid(browser, form.get('csrf_token') ?? undefined)) {
      return send(reply, errorPage('The form has expired', 'The sign-in form was not sent from this page or has expired. Go back and try again.', 403));
    }
    const own = ownRequest(request, form.get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest } = own;
    if (!settings.localAccountsEnabled) return send(reply, errorPage('Local accounts are off', 'Use the identity provider to sign in.', 403));
    const name = (form.get('name') ?? '').trim();
    const password = form.get('password') ?? '';
    const keys = [`name:${name.toLowerCase()}`, `address:${request.ip}`];
    const wait = throttle.retryAfter(keys, Date.now(), { [keys[1]!]: settings.maxFailedAttempts * 10 });
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      return signInFor(own.browser, reply, pendingRequest, { error: `Too many failed attempts. Try again in ${Math.ceil(wait / 60)} minute(s).`, name, status: 429 });
    }
    const person = name && password ? await people.verify(name, password) : undefined;
    if (!person) {
      throttle.recordFailure(keys);
      return signInFor(own.browser, reply, pendingRequest, { error: 'That name and password do not match an account.', name, status: 401 });
    }
    throttle.recordSuccess([keys[0]!]);
    const signedIn = browserSessions.signIn(browser, { subject: person.subject, name: person.name, ...(person.email ? { email: person.email } : {}), via: 'local' });
    return reply.status(303).header('set-cookie', browserSessions.setCookieHeader(signedIn)).header('location', consentUrl(pendingRequest.id)).send();
  });

  // ---- sign-in through the company's OIDC provider ----
  if (oidc) {
    instance.get(`${base}/signin/oidc`, async (request, reply) => {
      const own = ownRequest(request, queryOf(request).get('request'));
      if ('page' in own) return send(reply, own.page);
      const { pendingRequest, browser } = own;
      pendingRequest.isEngaged = true;
      pending.save(pendingRequest);
      const attempt = {
        state: randomBytes(24).toString('base64url'),
        nonce: randomBytes(24).toString('base64url'),
        codeVerifier: randomBytes(48).toString('base64url'),
        requestId: pendingRequest.id,
        startedAt: Date.now(),
      };
      browser.oidc = attempt;
      browserSessions.save(browser);
      try {
        const location = await oidc.start({ redirectUri: oidcCallback, ...attempt });
        return reply.status(303).header('cache-control', 'no-store').header('location', location).send();
      } catch (error) {
        context.logger.warn({ error: (error as Error).message }, 'OIDC sign-in could not start');
        return send(reply, errorPage('Sign-in is unavailable', (error as Error).message, 502));
      }
    });

    instance.get(`${base}/signin/oidc/callback`, async (request, reply) => {
      const browser = session(request);
      const attempt = browser?.oidc;
      if (!browser || !attempt || Date.now() - attempt.startedAt > settings.pendingRequestSeconds * 1000) {
        return send(reply, errorPage('This sign-in has expired', 'Start again from the application that sent you here.', 400));
      }
      delete browser.oidc;
      browserSessions.save(browser);
      const own = ownRequest(request, attempt.requestId);
      if ('page' in own) return send(reply, own.page);
      const { pendingRequest } = own;
      try {
        const person = await oidc.finish({ callbackUrl: new URL(request.url, settings.issuer), redirectUri: oidcCallback, ...attempt });
        const signedIn = browserSessions.signIn(browser, person);
        return reply.status(303).header('set-cookie', browserSessions.setCookieHeader(signedIn)).header('location', consentUrl(pendingRequest.id)).send();
      } catch (error) {
        const message = error instanceof GatewayError ? error.message : 'the identity provider answered unexpectedly';
        context.logger.warn({ error: (error as Error).message }, 'OIDC sign-in failed');
        return send(reply, errorPage('Sign-in failed', message, 401));
      }
    });
  }

  // ---- consent ----
  function lifetimes(): Array<{ seconds: number; label: string }> {
    return settings.lifetimeChoicesSeconds.map((seconds) => ({ seconds, label: lifetimeLabel(seconds) }));
  }

  interface ConsentChoices {
    tools: string[];
    logins: string[];
    lifetime?: number;
  }

  /**
   * What the page starts with. Nothing, for a first approval. When the application comes back for a
   * re-approval (a step-up challenge named the changed tools in `scope`, docs/authorization.md), the
   * tools it names and the tools of the person's latest open session with this application are ticked,
   * so approving again does not silently drop the tools that did not change.
   */
  function initialChoices(browser: BrowserSession, pendingRequest: PendingAuthorization, tools: ConsentTool[]): { choices: ConsentChoices; reapproval: string[] } {
    const offered = new Map(tools.map((tool) => [tool.name, tool] as const));
    const previous = store.sessions.latestOpen(browser.person!.subject, pendingRequest.client.clientId);
    const requested = (pendingRequest.requestedTools ?? []).filter((name) => offered.has(name));
    const previousTools = (previous?.tools ?? []).filter((tool) => offered.has(tool.name));
    // Every tool of the earlier approval that changed since is marked, not only the one the client named.
    const reapproval = previousTools.filter((tool) => tool.fingerprint !== offered.get(tool.name)!.fingerprint).map((tool) => tool.name);
    const names = [...new Set([...previousTools.map((tool) => tool.name), ...requested])];
    const usable = new Set(names.flatMap((name) => offered.get(name)!.logins));
    const logins = (previous?.logins ?? []).filter((login) => usable.has(login));
    const completed = completeLogins(names.map((name) => offered.get(name)!), logins);
    return { choices: { tools: names, logins: 'logins' in completed ? completed.logins : logins }, reapproval };
  }

  function renderConsent(
    browser: BrowserSession,
    pendingRequest: PendingAuthorization,
    extra: { error?: string; status?: number; choices?: ConsentChoices } = {},
  ): RenderedPage {
    const tools = [...context.listTools()].sort((a, b) => (a.source + a.name < b.source + b.name ? -1 : 1));
    pendingRequest.shownTools = tools;
    pending.save(pendingRequest);
    const neededLogins = new Set(tools.flatMap((tool) => tool.logins));
    const logins = context.listLogins().filter((login) => neededLogins.has(login.id));
    const client = pendingRequest.client;
    const initial = extra.choices ? undefined : initialChoices(browser, pendingRequest, tools);
    const choices = extra.choices ?? initial!.choices;
    return consentPage({
      requestId: pendingRequest.id,
      csrfToken: browser.csrfToken,
      gateway: settings.issuer,
      person: { name: browser.person!.name, ...(browser.person!.email ? { email: browser.person!.email } : {}) },
      client: {
        name: client.name,
        clientId: client.clientId,
        registration:
          client.registration === 'metadata-document'
            ? 'identified by its metadata document'
            : client.registration === 'dynamic'
              ? 'registered itself; the name is unverified'
              : 'pre-registered by the gateway administrator',
      },
      redirectHost: redirectDisplayHost(pendingRequest.redirectUri),
      redirectFormTarget: formTargetOf(pendingRequest.redirectUri),
      isLocalhostOnly: isLocalhostOnly(client.redirectUris),
      tools,
      logins,
      lifetimes: lifetimes(),
      selected: choices,
      ...(initial?.reapproval.length ? { reapproval: initial.reapproval } : {}),
      ...(extra.error ? { error: extra.error } : {}),
      ...(extra.status ? { status: extra.status } : {}),
    });
  }

  instance.get(`${base}/consent`, async (request, reply) => {
    const own = ownRequest(request, queryOf(request).get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest, browser } = own;
    pendingRequest.isEngaged = true;
    pending.save(pendingRequest);
    if (!browser.person) return reply.status(303).header('location', signInUrl(pendingRequest.id)).send();
    return send(reply, renderConsent(browser, pendingRequest));
  });

  instance.post(`${base}/consent`, async (request, reply) => {
    const form = formOf(request);
    const browser = session(request);
    if (!browserSessions.isCsrfTokenValid(browser, form.get('csrf_token') ?? undefined)) {
      return send(reply, errorPage('The form has expired', 'This decision was not sent from the consent page or the page has expired. Nothing was approved.', 403));
    }
    const own = ownRequest(request, form.get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest } = own;
    if (!browser!.person) return reply.status(303).header('location', signInUrl(pendingRequest.id)).send();
    const decision = form.get('decision');
    if (decision === 'deny') {
      // Single use: another worker may have decided it a moment ago.
      if (!pending.take(pendingRequest.id)) return send(reply, expiredPage());
      return redirectBack(reply, pendingRequest, { error: 'access_denied', error_description: 'the person denied the request' });
    }
    // A refused form is drawn again with exactly what the person submitted: nothing they picked is lost.
    const submitted: ConsentChoices = {
      tools: [...new Set(form.getAll('tool'))],
      logins: [...new Set(form.getAll('login'))],
      lifetime: Number(form.get('lifetime')),
    };
    const refuse = (error: string): FastifyReply => send(reply, renderConsent(browser!, pendingRequest, { error, status: 400, choices: submitted }));
    if (decision !== 'allow') return refuse('Choose Allow or Deny.');

    const shown = new Map((pendingRequest.shownTools ?? []).map((tool) => [tool.name, tool] as const));
    const chosen: ConsentTool[] = [];
    for (const name of submitted.tools) {
      const tool = shown.get(name);
      if (!tool) return refuse(`The tool ${name} is not offered; choose again.`);
      chosen.push(tool);
    }
    if (chosen.length === 0) return refuse('Choose at least one tool, or Deny.');
    const usable = new Set(chosen.flatMap((tool) => tool.logins));
    const known = new Set(context.listLogins().map((login) => login.id));
    const stray = submitted.logins.find((login) => !usable.has(login) || !known.has(login));
    if (stray) return refuse(`The login ${stray} is not used by the chosen tools; untick it or choose the tool that uses it.`);
    // Issue 20: a session with a tool but without its login fails every call (LOGIN_NOT_IN_SESSION).
    const completed = completeLogins(chosen, submitted.logins);
    if ('problem' in completed) return refuse(completed.problem);
    const chosenLogins = completed.logins;
    const lifetime = submitted.lifetime ?? Number.NaN;
    if (!settings.lifetimeChoicesSeconds.includes(lifetime)) return refuse('Choose one of the offered time limits.');

    if (!pending.take(pendingRequest.id)) return send(reply, expiredPage());
    const now = Date.now();
    const opened = store.openSession(
      {
        subject: browser!.person.subject,
        personName: browser!.person.name,
        clientId: pendingRequest.client.clientId,
        clientName: pendingRequest.client.name,
        // The fingerprints recorded are the ones shown: if a tool changes afterwards, /mcp refuses it.
        tools: chosen.map((tool) => ({ name: tool.name, fingerprint: tool.fingerprint })).sort((a, b) => (a.name < b.name ? -1 : 1)),
        logins: chosenLogins.sort(),
        expiresAt: now + lifetime * 1000,
      },
      now,
    );
    const code = randomToken();
    store.codes.save(code, {
      sessionId: opened.id,
      clientId: pendingRequest.client.clientId,
      redirectUri: pendingRequest.redirectUriParameter,
      codeChallenge: pendingRequest.codeChallenge,
      resource: pendingRequest.resource,
      expiresAt: Math.min(now + settings.codeSeconds * 1000, opened.expiresAt),
    });
    context.logger.info({ sessionId: opened.id, clientId: opened.clientId, subject: opened.subject, tools: opened.tools.length }, 'session opened');
    return redirectBack(reply, pendingRequest, { code });
  });
}
