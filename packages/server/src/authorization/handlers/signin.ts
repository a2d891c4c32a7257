import type { FastifyInstance, FastifyReply } from 'fastify';
import { errorPage, signInPage } from '../signin/pages.js';
import type { PendingAuthorization } from '../consent/pending.js';
import { FORM_BODY, formOf, oauthQuery, queryOf } from '../oauth/http.js';
import type { BrowserSession } from '../signin/browser-sessions.js';
import type { BrowserFlow } from './browser-flow.js';
import type { AuthorizationDependencies } from './dependencies.js';

/**
 * Where a sign-in not started by /authorize goes back to: a page of the gateway's own that asks for it (the
 * approval page). Only those paths: anything else would make the sign-in an open redirect.
 */
export function signInReturnPath(base: string, value: string | null | undefined): string | undefined {
  if (!value?.startsWith(`${base}/approvals/`)) return undefined;
  return /^\/[A-Za-z0-9._~/-]+$/.test(value) && !value.includes('//') && !value.includes('..') ? value : undefined;
}

/** `request`: the pending authorization the sign-in continues; or `return`: the gateway page that sent the visitor. */
const SIGNIN_QUERY = oauthQuery('request', 'return');

type SignInDependencies = Pick<AuthorizationDependencies, 'settings' | 'browserSessions' | 'oidc'>;

/** Sign-in with a local account (the people file): the page, and the form it posts. */
export function registerSignInEndpoint(
  instance: FastifyInstance,
  { settings, browserSessions, oidc }: SignInDependencies,
  flow: BrowserFlow,
): void {
  const { pending, send, session, ownRequest, consentUrl } = flow;
  const base = settings.basePath;

  function signInFor(
    browser: BrowserSession,
    reply: FastifyReply,
    pendingRequest: PendingAuthorization,
    extra: { error?: string; name?: string; status?: number } = {},
  ): FastifyReply {
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

  /** The sign-in page of a visitor sent from a gateway page (`?return=`), not from /authorize. */
  function signInToReturn(
    browser: BrowserSession,
    reply: FastifyReply,
    returnTo: string,
    extra: { error?: string; name?: string; status?: number } = {},
  ) {
    return send(
      reply,
      signInPage({
        requestId: '',
        returnTo,
        csrfToken: browser.csrfToken,
        gateway: settings.issuer,
        clientName: '',
        localAccounts: settings.localAccountsEnabled,
        ...extra,
      }),
    );
  }

  instance.get(`${base}/signin`, { schema: { querystring: SIGNIN_QUERY } }, async (request, reply) => {
    const query = queryOf(request);
    const returnTo = query.get('request') ? undefined : signInReturnPath(base, query.get('return'));
    if (returnTo) {
      const browser = await flow.ensureSession(request, reply);
      if (browser.person) return reply.status(303).header('location', returnTo).send();
      return signInToReturn(browser, reply, returnTo);
    }
    const own = await ownRequest(request, queryOf(request).get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest, browser } = own;
    pendingRequest.isEngaged = true;
    await pending.save(pendingRequest);
    if (browser.person) return reply.status(303).header('location', consentUrl(pendingRequest.id)).send();
    return signInFor(browser, reply, pendingRequest);
  });

  instance.post(`${base}/signin`, { schema: { body: FORM_BODY } }, async (request, reply) => {
    const form = formOf(request);
    const browser = await session(request);
    if (!browserSessions.isCsrfTokenValid(browser, form.get('csrf_token') ?? undefined)) {
      return send(
        reply,
        errorPage('The form has expired', 'The sign-in form was not sent from this page or has expired. Go back and try again.', 403),
      );
    }
    const returnTo = form.get('request') ? undefined : signInReturnPath(base, form.get('return'));
    const own = returnTo && browser ? { browser, pendingRequest: undefined } : await ownRequest(request, form.get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest } = own;
    const again = (extra: { error: string; name: string; status: number }) =>
      pendingRequest ? signInFor(own.browser, reply, pendingRequest, extra) : signInToReturn(own.browser, reply, returnTo!, extra);
    if (!settings.localAccountsEnabled)
      return send(reply, errorPage('Local accounts are off', 'Use the identity provider to sign in.', 403));
    const name = (form.get('name') ?? '').trim();
    const checked = await flow.localSignIn.verify(name, form.get('password') ?? '', request.ip);
    if (!checked.ok) {
      if (checked.retryAfterSeconds !== undefined) reply.header('retry-after', String(checked.retryAfterSeconds));
      return again({ error: checked.error, name, status: checked.status });
    }
    const signedIn = await browserSessions.signIn(browser, checked.person);
    return reply
      .status(303)
      .header('set-cookie', browserSessions.setCookieHeader(signedIn))
      .header('location', pendingRequest ? consentUrl(pendingRequest.id) : returnTo!)
      .send();
  });
}
