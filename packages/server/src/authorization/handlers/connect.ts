import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BrowserIdentity, LinkOutcome } from '../../credentials/person/index.js';
import { connectSignInPage, errorPage, noticePage } from '../signin/pages.js';
import { FORM_BODY, formOf, oauthQuery, queryOf } from '../oauth/http.js';
import type { BrowserFlow } from './browser-flow.js';
import type { AuthorizationDependencies } from './dependencies.js';

/** The provider's answer (RFC 6749 §4.1.2, RFC 9207): each parameter is checked by the linking flow. */
const CONNECT_CALLBACK_QUERY = oauthQuery('code', 'state', 'iss', 'error', 'error_description');

type ConnectDependencies = Pick<AuthorizationDependencies, 'settings' | 'personLogins' | 'browserSessions' | 'oidc'>;

/**
 * The connect page of per-person logins (`/connect?ticket=…`), its sign-in (`/connect/signin` for local accounts;
 * the OIDC sign-in, `/signin/oidc?next=<this connect page>`, when `auth.oidc` is set) and the provider's callback
 * (`/connect/callback`): linking runs in credentials/person/linking.ts; this answers its outcomes. The page
 * requires the ticket's own person signed in to the gateway in this browser, and the callback the same browser.
 */
export function registerConnectEndpoints(
  instance: FastifyInstance,
  { settings, personLogins, browserSessions, oidc }: ConnectDependencies,
  flow: BrowserFlow,
): void {
  if (!personLogins) return;
  const base = settings.basePath;
  const { linking } = personLogins;

  async function identity(request: FastifyRequest): Promise<BrowserIdentity> {
    const browser = await flow.session(request);
    return { browserId: browser?.browserId ?? '', person: browser?.person?.subject };
  }

  async function signInFirst(
    request: FastifyRequest,
    reply: FastifyReply,
    ticket: string,
    extra: { error?: string; name?: string; status?: number } = {},
  ): Promise<FastifyReply> {
    if (!settings.localAccountsEnabled && !oidc) {
      return flow.send(
        reply,
        errorPage(
          'Sign in first',
          'This page links an account for the person signed in to the gateway. Sign in to the gateway in this browser (through ' +
            'your application), then open the link again.',
          401,
        ),
      );
    }
    const provider = await linking.providerOf(ticket);
    if (!provider) {
      return flow.send(
        reply,
        errorPage(
          'This link cannot be used',
          'It is not valid or has expired, or its provider cannot be reached now. Call the tool again for a new link.',
          400,
        ),
      );
    }
    const browser = await flow.ensureSession(request, reply);
    return flow.send(
      reply,
      connectSignInPage({
        action: `${base}/connect/signin`,
        csrfToken: browser.csrfToken,
        ticket,
        gateway: settings.issuer,
        localAccounts: settings.localAccountsEnabled,
        // The OIDC sign-in comes back to this very page (a path of this gateway), which the sign-in does not spend.
        ...(oidc
          ? {
              oidc: {
                label: oidc.label,
                href: `${base}/signin/oidc?next=${encodeURIComponent(`${base}/connect?ticket=${encodeURIComponent(ticket)}`)}`,
              },
            }
          : {}),
        label: provider.label,
        providerOrigin: provider.origin,
        ...extra,
      }),
    );
  }

  async function answer(request: FastifyRequest, reply: FastifyReply, outcome: LinkOutcome, ticket: string): Promise<FastifyReply> {
    reply.header('cache-control', 'no-store');
    switch (outcome.kind) {
      case 'redirect':
        return reply.status(303).header('location', outcome.location).send();
      case 'sign-in':
        return signInFirst(request, reply, ticket);
      case 'linked':
        return flow.send(
          reply,
          noticePage(
            `Connected ${outcome.label}`,
            `Your ${outcome.label} account is linked for ${outcome.account.login}. Go back to your application: its next call ` +
              'runs as you. You can close this tab.',
          ),
        );
      case 'refused':
        return flow.send(reply, errorPage(outcome.title, outcome.message, outcome.status));
      default: {
        const unreachable: never = outcome;
        return unreachable;
      }
    }
  }

  instance.get(`${base}/connect/callback`, { schema: { querystring: CONNECT_CALLBACK_QUERY } }, async (request, reply) =>
    answer(request, reply, await linking.complete(new URL(request.url, settings.issuer), await identity(request)), ''),
  );

  instance.get(`${base}/connect`, { schema: { querystring: oauthQuery('ticket') } }, async (request, reply) => {
    const ticket = queryOf(request).get('ticket') ?? '';
    return answer(request, reply, await linking.begin(ticket, await identity(request)), ticket);
  });

  // A local account's sign-in, then on to the same ticket (which the sign-in does not spend).
  instance.post(`${base}/connect/signin`, { schema: { body: FORM_BODY } }, async (request, reply) => {
    const form = formOf(request);
    const browser = await flow.session(request);
    const ticket = form.get('ticket') ?? '';
    reply.header('cache-control', 'no-store');
    if (!browserSessions.isCsrfTokenValid(browser, form.get('csrf_token') ?? undefined)) {
      return flow.send(
        reply,
        errorPage('The form has expired', 'The sign-in form was not sent from this page or has expired. Open the link again.', 403),
      );
    }
    if (!settings.localAccountsEnabled)
      return flow.send(reply, errorPage('Local accounts are off', 'Sign in through your application.', 403));
    const name = (form.get('name') ?? '').trim();
    const checked = await flow.localSignIn.verify(name, form.get('password') ?? '', request.ip);
    if (!checked.ok) {
      if (checked.retryAfterSeconds !== undefined) reply.header('retry-after', String(checked.retryAfterSeconds));
      return signInFirst(request, reply, ticket, { error: checked.error, name, status: checked.status });
    }
    const signedIn = await browserSessions.signIn(browser, checked.person);
    return reply
      .status(303)
      .header('set-cookie', browserSessions.setCookieHeader(signedIn))
      .header('location', `${base}/connect?ticket=${encodeURIComponent(ticket)}`)
      .send();
  });
}
