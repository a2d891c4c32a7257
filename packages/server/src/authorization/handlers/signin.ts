import type { FastifyInstance, FastifyReply } from 'fastify';
import { errorPage, signInPage } from '../signin/pages.js';
import type { PendingAuthorization } from '../consent/pending.js';
import { FORM_BODY, formOf, queryOf } from '../oauth/http.js';
import type { BrowserSession } from '../signin/browser-sessions.js';
import { returnPathOf, SIGN_IN_QUERY, type BrowserFlow } from './browser-flow.js';
import type { AuthorizationDependencies } from './dependencies.js';

type SignInDependencies = Pick<AuthorizationDependencies, 'settings' | 'browserSessions' | 'oidc'>;

/** Sign-in with a local account (the people file): the page, and the form it posts. */
export function registerSignInEndpoint(
  instance: FastifyInstance,
  { settings, browserSessions, oidc }: SignInDependencies,
  flow: BrowserFlow,
): void {
  const { pending, send, session, ownRequest, consentUrl, ensureSession } = flow;
  const base = settings.basePath;

  function signInFor(
    browser: BrowserSession,
    reply: FastifyReply,
    target: PendingAuthorization | { returnTo: string },
    extra: { error?: string; name?: string; status?: number } = {},
  ): FastifyReply {
    const continues = 'returnTo' in target ? `next=${encodeURIComponent(target.returnTo)}` : `request=${encodeURIComponent(target.id)}`;
    return send(
      reply,
      signInPage({
        target: 'returnTo' in target ? target : { requestId: target.id, clientName: target.client.name },
        csrfToken: browser.csrfToken,
        gateway: settings.issuer,
        localAccounts: settings.localAccountsEnabled,
        ...(oidc ? { oidc: { label: oidc.label, href: `${base}/signin/oidc?${continues}` } } : {}),
        ...extra,
      }),
    );
  }

  instance.get(`${base}/signin`, { schema: { querystring: SIGN_IN_QUERY } }, async (request, reply) => {
    const query = queryOf(request);
    const returnTo = query.get('request') ? undefined : returnPathOf(query.get('next'), base);
    if (returnTo) {
      // Signing in to reach a page of this gateway (the console), not for a client.
      const browser = await ensureSession(request, reply);
      if (browser.person) return reply.status(303).header('location', returnTo).send();
      return signInFor(browser, reply, { returnTo });
    }
    const own = await ownRequest(request, query.get('request'));
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
    const returnTo = form.get('request') ? undefined : returnPathOf(form.get('next'), base);
    const own = returnTo && browser ? { browser, pendingRequest: { returnTo } } : await ownRequest(request, form.get('request'));
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
      .header('location', 'returnTo' in pendingRequest ? pendingRequest.returnTo : consentUrl(pendingRequest.id))
      .send();
  });
}
