/**
 * Linking a person's account for a per-person login: the connect page's ticket is opened by the person it names
 * (signed in to the gateway in that browser), which starts the authorization code flow at the provider (PKCE
 * S256, state, nonce); the provider's answer comes back to the callback in the same browser, whose code is
 * redeemed, the tokens go to the vault and the link to the store. Protocol-free: the authorization area's
 * connect handler turns these outcomes into pages and redirects.
 *
 * The attempt in flight (its `state`, nonce and PKCE verifier, the ticket's claims, the browser) is kept in the
 * ephemeral state port (store/ephemeral-state.ts) until the callback takes it: with workers or replicas, the
 * storage they share, because the provider's redirect may reach another process than the one that started the
 * flow. There it is named by the hash of its `state` and sealed with it (store/sealed.ts), so the
 * database never holds a verifier it could be redeemed with.
 */
import { randomBytes } from 'node:crypto';
import { GatewayError } from '@gateway/core';
import type { PersonTokenSet } from '@gateway/runtime';
import { seal, sealedKey, unseal } from '../../store/sealed.js';
import type { EphemeralState } from '../../store/ephemeral-state.js';
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
/** Attempts one process keeps in flight at most: past that, the oldest it started are dropped. */
const MAX_ATTEMPTS = 2_000;
/** The ephemeral state kind of attempts in flight. */
const ATTEMPT = 'link-attempt';

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
  /** Where attempts in flight are kept until their callback (shared by the processes serving together). */
  state: EphemeralState;
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
  const attempts = attemptsIn(options.state);

  return {
    async providerOf(ticket) {
      const opened = await options.tickets.open(ticket, now());
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
      const opened = await options.tickets.open(ticket, at);
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
        await attempts.add(state, attempt);
        return { kind: 'redirect', location };
      } catch (error) {
        options.warn({ login: claims.login, error: (error as Error).message }, 'linking could not start');
        return refused(502, `${settings.label} is unavailable`, (error as Error).message);
      }
    },

    async complete(callbackUrl, browser) {
      const state = callbackUrl.searchParams.get('state') ?? '';
      // Single use: the state is gone once a callback took it, right or wrong (in whichever process).
      const attempt = state === '' ? undefined : await attempts.take(state, now());
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
      if (!(await options.tickets.spend(claims, now()))) {
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

/**
 * The attempts in flight in `state`, by their `state` parameter: in a shared store under its hash and sealed with
 * it; in this process's memory as they are. Bounded per process over the attempts it started (the oldest go first).
 */
function attemptsIn(state: EphemeralState) {
  /** Store keys of the attempts this process started, oldest first, with their expiry. */
  const started = new Map<string, number>();
  const keyOf = (attemptState: string): string => (state.isShared ? sealedKey(attemptState) : attemptState);

  async function makeRoom(at: number): Promise<void> {
    for (const [key, expiresAt] of started) if (expiresAt <= at) started.delete(key);
    for (const key of started.keys()) {
      if (started.size < MAX_ATTEMPTS) break;
      started.delete(key);
      await state.delete(ATTEMPT, key);
    }
  }

  return {
    async add(attemptState: string, attempt: LinkAttempt): Promise<void> {
      const expiresAt = attempt.startedAt + LINK_ATTEMPT_TTL_MS;
      await makeRoom(attempt.startedAt);
      const text = JSON.stringify(attempt);
      const key = keyOf(attemptState);
      await state.put(ATTEMPT, key, state.isShared ? seal('link-attempt', attemptState, text) : text, expiresAt);
      started.set(key, expiresAt);
    },
    async take(attemptState: string, at: number): Promise<LinkAttempt | undefined> {
      const key = keyOf(attemptState);
      started.delete(key);
      const stored = await state.take(ATTEMPT, key, at);
      const text = stored === undefined || !state.isShared ? stored : unseal('link-attempt', attemptState, stored);
      return text === undefined ? undefined : (JSON.parse(text) as LinkAttempt);
    },
  };
}
