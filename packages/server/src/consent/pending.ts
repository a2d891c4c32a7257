import { randomBytes } from 'node:crypto';
import type { ConsentTool } from '../auth/types.js';
import type { OAuthClient } from '../oauth/clients.js';

/** A validated /authorize request waiting for sign-in and a decision. */
export interface PendingAuthorization {
  id: string;
  client: OAuthClient;
  /** The redirect URI to answer on (verified against the client's registration). */
  redirectUri: string;
  /** The redirect_uri parameter as sent ('' when omitted); the token request must repeat it. */
  redirectUriParameter: string;
  state: string | null;
  codeChallenge: string;
  resource: string;
  /** The tools exactly as last shown on the consent page: their fingerprints are what the person approves. */
  shownTools?: ConsentTool[];
  expiresAt: number;
}

/**
 * Pending requests live in memory for a few minutes: their id is a random, single-use name (MCP
 * Security Best Practices: handles are names, not credentials) and they carry nothing secret.
 */
export class PendingAuthorizations {
  private readonly requests = new Map<string, PendingAuthorization>();

  constructor(
    private readonly lifetimeSeconds: number,
    private readonly maxRequests = 10_000,
  ) {}

  add(request: Omit<PendingAuthorization, 'id' | 'expiresAt'>, now = Date.now()): PendingAuthorization {
    if (this.requests.size >= this.maxRequests) {
      for (const [id, pending] of this.requests) if (pending.expiresAt <= now) this.requests.delete(id);
      while (this.requests.size >= this.maxRequests) this.requests.delete(this.requests.keys().next().value!);
    }
    const pending: PendingAuthorization = { ...request, id: randomBytes(24).toString('base64url'), expiresAt: now + this.lifetimeSeconds * 1000 };
    this.requests.set(pending.id, pending);
    return pending;
  }

  find(id: string | null | undefined, now = Date.now()): PendingAuthorization | undefined {
    if (!id) return undefined;
    const pending = this.requests.get(id);
    if (!pending) return undefined;
    if (pending.expiresAt <= now) {
      this.requests.delete(id);
      return undefined;
    }
    return pending;
  }

  /** Single use: a decision removes the request. */
  take(id: string): void {
    this.requests.delete(id);
  }
}
