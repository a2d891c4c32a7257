/**
 * Linking a person's account for a per-person login: the connect page's ticket is opened by the person it names
 * (signed in to the gateway in that browser), which starts the authorization code flow at the provider (PKCE
 * S256, state, nonce); the provider's answer comes back to the callback in the same browser, whose code is
 * redeemed, the tokens go to the vault and the link to the store. Protocol-free: the authorization area's
 * connect handler turns these outcomes into pages and redirects.
 */
import { randomBytes } from 'node:crypto';
import { GatewayError } from '@gateway/core';
import type { PersonTokenSet } from '@gateway/runtime';
import type { ConnectTicketClaims, ConnectTickets } from './connect-tickets.js';
import type { LinkedAccount } from './ports.js';
import type { PersonLoginSettings } from './settings.js';

/** Who is at the browser: its id (the cookie's browser) and the person signed in there, if any. */
export interface BrowserIdentity {
  browserId: string;
  person: string | undefined;
}

export type LinkOutcome =
  | { kind: 'redirect'; location: string }
  /** The ticket is good and no one is signed in to the gateway in this browser: the person signs in first. */
  | { kind: 'sign-in' }
  | { kind: 'linked'; account: LinkedAccount; label: string }
  | { kind: 'refused'; status: number; title: string; message: string };

interface LinkAttempt {
  claims: ConnectTicketClaims;
  browserId: string;
  nonce: string;
  codeVerifier: string;
  startedAt: number;
}

/** How long a person has at the provider before the callback is refused. */
export const LINK_ATTEMPT_TTL_MS = 10 * 60_000;
const MAX_ATTEMPTS = 2_000;

export interface Linking {
  /** Opens a connect ticket for the browser's person and starts the flow at the provider. */
  begin(ticket: string, browser: BrowserIdentity): Promise<LinkOutcome>;
  /** The provider's answer on the callback. */
  complete(callbackUrl: URL, browser: BrowserIdentity): Promise<LinkOutcome>;
  /**
   * The provider a good ticket links, spending nothing: what pages name it, and the origin a form on the way
   * there must be allowed to reach (CSP `form-action` also applies to the redirects after a submit); undefined for
   * a bad ticket.
   */
  providerOf(ticket: string): Promise<{ label: string; origin: string } | undefined>;
}

export interface LinkingOptions {
  settings: ReadonlyMap<string, PersonLoginSettings>;
  tickets: ConnectTickets;
  redirectUri: string;
  /** Stores the tokens and the link (the service's `link`). */
  link(account: Omit<LinkedAccount, 'linkedAt'>, tokens: PersonTokenSet): Promise<LinkedAccount>;
  warn(details: object, message: string): void;
  now?: () => number;
}

type RedeemedTokens = PersonTokenSet & { subject: string | null };

const refused = (status: number, title: string, message: string): LinkOutcome => ({ kind: 'refused', status, title, message });

export function createLinking(options: LinkingOptions): Linking {
  const now = options.now ?? Date.now;
  /** Attempts in flight, by `state`: taken once by the callback. */
  const attempts = new Map<string, LinkAttempt>();

  function forgetOld(at: number): void {
    for (const [state, attempt] of attempts) if (at - attempt.startedAt > LINK_ATTEMPT_TTL_MS) attempts.delete(state);
    // Still full: the oldest go first (Map order).
    for (const state of attempts.keys()) {
      if (attempts.size < MAX_ATTEMPTS) break;
      attempts.delete(state);
    }
  }

  return {
    async providerOf(ticket) {
      const opened = options.tickets.open(ticket, now());
      const settings = opened.ok ? options.settings.get(opened.claims.login) : undefined;
      if (!settings) return undefined;
      try {
        return { label: settings.label, origin: new URL(await settings.client.authorizationEndpoint()).origin };
      } catch {
        return undefined;
      }
    },

    async begin(ticket, browser) {
      const at = now();
      const opened = options.tickets.open(ticket, at);
      if (!opened.ok) {
        return opened.why === 'invalid'
          ? refused(
              400,
              'This link is not valid',
              'The link was changed or was not made by this gateway. Call the tool again for a new one.',
            )
          : opened.why === 'expired'
            ? refused(400, 'This link has expired', 'Call the tool again from your application for a new link.')
            : refused(400, 'This link was already used', 'Each link works once. Call the tool again from your application for a new one.');
      }
      const { claims } = opened;
      if (!browser.person) return { kind: 'sign-in' };
      // The link is the person's own: another person opening it (a forwarded URL) links nothing.
      if (browser.person !== claims.person) {
        return refused(403, 'This link is for someone else', 'It was made for another person. Nothing was linked.');
      }
      const settings = options.settings.get(claims.login);
      if (!settings) return refused(400, 'This login is no longer offered', `The gateway has no per-person login ${claims.login}.`);
      forgetOld(at);
      const state = randomBytes(24).toString('base64url');
      const attempt: LinkAttempt = {
        claims,
        browserId: browser.browserId,
        nonce: randomBytes(24).toString('base64url'),
        codeVerifier: randomBytes(48).toString('base64url'),
        startedAt: at,
      };
      try {
        const location = await settings.client.authorizationUrl({ redirectUri: options.redirectUri, state, ...attempt });
        attempts.set(state, attempt);
        return { kind: 'redirect', location };
      } catch (error) {
        options.warn({ login: claims.login, error: (error as Error).message }, 'linking could not start');
        return refused(502, `${settings.label} is unavailable`, (error as Error).message);
      }
    },

    async complete(callbackUrl, browser) {
      const state = callbackUrl.searchParams.get('state') ?? '';
      const attempt = attempts.get(state);
      // Single use: the state is gone once a callback took it, right or wrong.
      attempts.delete(state);
      if (!attempt || now() - attempt.startedAt > LINK_ATTEMPT_TTL_MS) {
        return refused(400, 'This link attempt has expired', 'Nothing was linked. Call the tool again for a new link.');
      }
      if (attempt.browserId !== browser.browserId || attempt.claims.person !== browser.person) {
        return refused(
          403,
          'This link attempt belongs to another browser',
          'Nothing was linked. Start again in the browser you signed in with.',
        );
      }
      const { claims } = attempt;
      const settings = options.settings.get(claims.login);
      if (!settings) return refused(400, 'This login is no longer offered', `The gateway has no per-person login ${claims.login}.`);
      // Single use: the ticket is spent by the link it makes (opening it, as a browser's prefetch may, spends nothing).
      if (!options.tickets.spend(claims, now())) {
        return refused(400, 'This link was already used', 'Each link works once. Call the tool again for a new one.');
      }
      let tokens: RedeemedTokens;
      try {
        tokens = await settings.client.redeem({ callbackUrl, redirectUri: options.redirectUri, state, ...attempt });
      } catch (error) {
        options.warn({ login: claims.login, error: (error as Error).message }, 'linking failed');
        const message = error instanceof GatewayError ? error.message : 'the provider answered unexpectedly';
        return refused(401, 'Linking failed', message);
      }
      const account = await options.link(
        {
          person: claims.person,
          login: claims.login,
          subject: tokens.subject,
          scopes: tokens.scope.split(' ').filter((scope) => scope !== ''),
          expiresAt: tokens.expiresAt,
        },
        tokens,
      );
      return { kind: 'linked', account, label: settings.label };
    },
  };
}
