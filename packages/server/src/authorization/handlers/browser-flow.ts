import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendPage, type RenderedPage } from '../../views/index.js';
import { errorPage } from '../signin/pages.js';
import { PendingAuthorizations, type PendingAuthorization } from '../consent/pending.js';
import type { BrowserSession } from '../signin/browser-sessions.js';
import { oauthQuery } from '../oauth/http.js';
import { createLocalSignIn, type LocalSignIn } from '../signin/local-signin.js';
import type { AuthorizationDependencies } from './dependencies.js';

/** The pages of the browser flow name the pending request they continue (`?request=`). */
export const PENDING_REQUEST_QUERY = oauthQuery('request');

/**
 * What the browser-facing endpoints (/authorize, sign-in, consent) share: the pending requests a person
 * moves through, the browser session cookie, and the answers they all give. Built once per server, so
 * a request started at /authorize is the one the sign-in and consent pages continue.
 */
export interface BrowserFlow {
  pending: PendingAuthorizations;
  send(reply: FastifyReply, page: RenderedPage): FastifyReply;
  /** RFC 9207 §2: every authorization response, success or error, names the issuer. */
  redirectBack(
    reply: FastifyReply,
    request: PendingAuthorization | { redirectUri: string; state: string | null },
    parameters: Record<string, string>,
  ): FastifyReply;
  session(request: FastifyRequest): Promise<BrowserSession | undefined>;
  ensureSession(request: FastifyRequest, reply: FastifyReply): Promise<BrowserSession>;
  tooManyRequests(reply: FastifyReply, seconds: number, why: string): FastifyReply;
  /**
   * The pending request named by `id`, continued by the browser that started it; a page to show when it
   * has expired or another browser (another cookie jar) tries to continue it.
   */
  ownRequest(
    request: FastifyRequest,
    id: string | null | undefined,
  ): Promise<{ pendingRequest: PendingAuthorization; browser: BrowserSession } | { page: RenderedPage }>;
  expiredPage(): RenderedPage;
  consentUrl(id: string): string;
  signInUrl(id: string): string;
  /** A local account's name and password, checked under one throttle for every page that signs people in. */
  localSignIn: LocalSignIn;
}

export function createBrowserFlow({
  settings,
  browserSessions,
  ephemeral,
  people,
  throttles,
}: Pick<AuthorizationDependencies, 'settings' | 'browserSessions' | 'ephemeral' | 'people' | 'throttles'>): BrowserFlow {
  const base = settings.basePath;
  const limits = settings.authorize;
  const pending = new PendingAuthorizations(settings.pendingRequestSeconds, ephemeral, {
    maxRequests: limits.maxPending,
    maxPerClient: limits.maxPendingPerClient,
  });

  function session(request: FastifyRequest): Promise<BrowserSession | undefined> {
    return browserSessions.find(request.headers.cookie);
  }

  function expiredPage(): RenderedPage {
    return errorPage('This request has expired', 'Start again from the application that sent you here.', 400);
  }

  return {
    pending,
    send: sendPage,
    session,
    expiredPage,
    redirectBack(reply, request, parameters) {
      const target = new URL(request.redirectUri);
      for (const [name, value] of Object.entries(parameters)) target.searchParams.set(name, value);
      if (request.state !== null) target.searchParams.set('state', request.state);
      target.searchParams.set('iss', settings.issuer);
      // RFC 9700 §4.12: 303 after a POST, so the browser does not re-send the form to the client.
      return reply.status(303).header('cache-control', 'no-store').header('location', target.href).send();
    },
    async ensureSession(request, reply) {
      const existing = await session(request);
      if (existing) return existing;
      const created = await browserSessions.create();
      reply.header('set-cookie', browserSessions.setCookieHeader(created));
      return created;
    },
    tooManyRequests(reply, seconds, why) {
      reply.header('retry-after', String(seconds));
      return sendPage(reply, errorPage('Too many sign-in requests', `${why} Try again in ${seconds} second(s).`, 429));
    },
    async ownRequest(request, id) {
      const pendingRequest = await pending.find(id);
      if (!pendingRequest) return { page: expiredPage() };
      const browser = await session(request);
      if (!browser || browser.browserId !== pendingRequest.browserId) {
        return {
          page: errorPage(
            'This request belongs to another browser',
            'This sign-in request was started in another browser or window profile, so it cannot be continued here. Nothing was ' +
              'approved. Start again from the application, in this browser.',
            403,
          ),
        };
      }
      return { pendingRequest, browser };
    },
    localSignIn: createLocalSignIn(settings, people, throttles),
    consentUrl: (id) => `${base}/consent?request=${encodeURIComponent(id)}`,
    signInUrl: (id) => `${base}/signin?request=${encodeURIComponent(id)}`,
  };
}
