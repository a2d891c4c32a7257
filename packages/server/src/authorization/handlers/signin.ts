import type { FastifyInstance, FastifyReply } from 'fastify';
import { errorPage, signInPage } from '../signin/pages.js';
import type { PendingAuthorization } from '../consent/pending.js';
import { FORM_BODY, formOf, queryOf } from '../oauth/http.js';
import type { BrowserSession } from '../signin/browser-sessions.js';
import { PENDING_REQUEST_QUERY, type BrowserFlow } from './browser-flow.js';
import type { AuthorizationDependencies } from './dependencies.js';

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

  instance.get(`${base}/signin`, { schema: { querystring: PENDING_REQUEST_QUERY } }, async (request, reply) => {
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
    const own = await ownRequest(request, form.get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest } = own;
    if (!settings.localAccountsEnabled)
      return send(reply, errorPage('Local accounts are off', 'Use the identity provider to sign in.', 403));
    const name = (form.get('name') ?? '').trim();
    const checked = await flow.localSignIn.verify(name, form.get('password') ?? '', request.ip);
    if (!checked.ok) {
      if (checked.retryAfterSeconds !== undefined) reply.header('retry-after', String(checked.retryAfterSeconds));
      return signInFor(own.browser, reply, pendingRequest, { error: checked.error, name, status: checked.status });
    }
    const signedIn = await browserSessions.signIn(browser, checked.person);
    return reply
      .status(303)
      .header('set-cookie', browserSessions.setCookieHeader(signedIn))
      .header('location', consentUrl(pendingRequest.id))
      .send();
  });
}
