import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { GatewayError } from '@gateway/core';
import { errorPage } from '../signin/pages.js';
import { oauthQuery, queryOf } from '../oauth/http.js';
import type { OidcSignIn } from '../signin/oidc.js';
import { PENDING_REQUEST_QUERY, type BrowserFlow } from './browser-flow.js';
import type { AuthorizationDependencies } from './dependencies.js';

/** The provider's authorization response (RFC 6749 §4.1.2, §4.1.2.1; RFC 9207 `iss`), checked by oauth4webapi. */
const CALLBACK_QUERY = oauthQuery('code', 'state', 'iss', 'error', 'error_description', 'error_uri');

/** Sign-in through the company's OIDC provider: the redirect there, and the callback it answers on. */
export function registerOidcSignInEndpoints(
  instance: FastifyInstance,
  { settings, browserSessions, logger }: Pick<AuthorizationDependencies, 'settings' | 'browserSessions' | 'logger'>,
  oidc: OidcSignIn,
  flow: BrowserFlow,
): void {
  const { pending, send, session, ownRequest, consentUrl } = flow;
  const base = settings.basePath;
  const oidcCallback = `${settings.issuer}/signin/oidc/callback`;

  instance.get(`${base}/signin/oidc`, { schema: { querystring: PENDING_REQUEST_QUERY } }, async (request, reply) => {
    const own = await ownRequest(request, queryOf(request).get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest, browser } = own;
    pendingRequest.isEngaged = true;
    await pending.save(pendingRequest);
    const attempt = {
      state: randomBytes(24).toString('base64url'),
      nonce: randomBytes(24).toString('base64url'),
      codeVerifier: randomBytes(48).toString('base64url'),
      requestId: pendingRequest.id,
      startedAt: Date.now(),
    };
    browser.oidc = attempt;
    await browserSessions.save(browser);
    try {
      const location = await oidc.start({ redirectUri: oidcCallback, ...attempt });
      return reply.status(303).header('cache-control', 'no-store').header('location', location).send();
    } catch (error) {
      logger.warn({ error: (error as Error).message }, 'OIDC sign-in could not start');
      return send(reply, errorPage('Sign-in is unavailable', (error as Error).message, 502));
    }
  });

  instance.get(`${base}/signin/oidc/callback`, { schema: { querystring: CALLBACK_QUERY } }, async (request, reply) => {
    const browser = await session(request);
    const attempt = browser?.oidc;
    if (!browser || !attempt || Date.now() - attempt.startedAt > settings.pendingRequestSeconds * 1000) {
      return send(reply, errorPage('This sign-in has expired', 'Start again from the application that sent you here.', 400));
    }
    delete browser.oidc;
    await browserSessions.save(browser);
    const own = await ownRequest(request, attempt.requestId);
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest } = own;
    try {
      const person = await oidc.finish({ callbackUrl: new URL(request.url, settings.issuer), redirectUri: oidcCallback, ...attempt });
      const signedIn = await browserSessions.signIn(browser, person);
      return reply
        .status(303)
        .header('set-cookie', browserSessions.setCookieHeader(signedIn))
        .header('location', consentUrl(pendingRequest.id))
        .send();
    } catch (error) {
      const message = error instanceof GatewayError ? error.message : 'the identity provider answered unexpectedly';
      logger.warn({ error: (error as Error).message }, 'OIDC sign-in failed');
      return send(reply, errorPage('Sign-in failed', message, 401));
    }
  });
}
