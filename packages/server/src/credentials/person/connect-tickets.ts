/**
 * The ticket in a connect page's URL (`/connect?ticket=<ticket>`): what the gateway hands a person to link their account
 * for a per-person login, from a call that needs it ("a person must act first") or from the consent page. It
 * seals who must open it (the session's person), for which session and login, an expiry and a nonce, with an
 * HMAC-SHA-256 whose key only the gateway holds (the vault). Anyone may read the claims; no one can change them.
 * Single use is enforced by the caller on the nonce (ConnectTickets.spend), claimed in the ephemeral state port
 * (store/ephemeral-state.ts): with workers or replicas, the storage they share, so a ticket spent in one process is
 * refused by every other.
 */
import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { EphemeralState } from '../../store/ephemeral-state.js';

export interface ConnectTicketClaims {
  /** The person who must be signed in to open it. */
  person: string;
  /** The login to link (`<source>/<scheme>`). */
  login: string;
  /** The session whose call asked for it; null when the consent page offered it (no session yet). */
  session: string | null;
  /** Epoch milliseconds after which it is refused. */
  expiresAt: number;
  nonce: string;
}

export type OpenedTicket = { ok: true; claims: ConnectTicketClaims } | { ok: false; why: 'invalid' | 'expired' | 'used' };

/** How long a connect link may wait to be opened. */
export const CONNECT_TICKET_TTL_MS = 10 * 60_000;

const VERSION = 'c1';

/** The ephemeral state kind of spent tickets' nonces. */
const SPENT = 'connect-ticket-spent';

export interface ConnectTickets {
  issue(claims: Omit<ConnectTicketClaims, 'expiresAt' | 'nonce'>, now: number): string;
  /** The claims of an intact, unexpired, unspent ticket; spends nothing. */
  open(ticket: string, now: number): Promise<OpenedTicket>;
  /**
   * Spends a ticket, once across every process sharing `state`: false when it was spent already (single use; of
   * two concurrent spends, one wins).
   */
  spend(claims: ConnectTicketClaims, now: number): Promise<boolean>;
}

/** `state`: where spent nonces are claimed (the storage processes share, or this process's memory). */
export function createConnectTickets(key: Uint8Array, state: EphemeralState): ConnectTickets {
  const secret: KeyObject = createSecretKey(key);
  const tag = (payload: string): Buffer => createHmac('sha256', secret).update(`${VERSION}.${payload}`).digest();

  return {
    issue(claims, now) {
      const sealed: ConnectTicketClaims = {
        ...claims,
        expiresAt: now + CONNECT_TICKET_TTL_MS,
        nonce: randomBytes(16).toString('base64url'),
      };
      const payload = Buffer.from(JSON.stringify(sealed), 'utf8').toString('base64url');
      return `${VERSION}.${payload}.${tag(payload).toString('base64url')}`;
    },
    async open(ticket, now) {
      const parts = ticket.split('.');
      if (parts.length !== 3 || parts[0] !== VERSION) return { ok: false, why: 'invalid' };
      const [, payload, signature] = parts as [string, string, string];
      const given = Buffer.from(signature, 'base64url');
      const wanted = tag(payload);
      if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) return { ok: false, why: 'invalid' };
      let claims: ConnectTicketClaims;
      try {
        claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as ConnectTicketClaims;
      } catch {
        return { ok: false, why: 'invalid' };
      }
      if (typeof claims.expiresAt !== 'number' || claims.expiresAt <= now) return { ok: false, why: 'expired' };
      if ((await state.get(SPENT, claims.nonce, now)) !== undefined) return { ok: false, why: 'used' };
      return { ok: true, claims };
    },
    // Kept until the ticket expires: after that it is refused as expired anyway.
    spend: (claims, now) => state.claimOnce(SPENT, claims.nonce, claims.expiresAt, now),
  };
}

/** The vault entry holding the tickets' key (created on first start; the file vault is writable). */
export const CONNECT_TICKET_KEY_SECRET = 'connect-ticket-key';
