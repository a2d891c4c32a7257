import { randomBytes } from 'node:crypto';
import type { ConsentTool } from './consent-tool.js';
import type { OAuthClient } from '../oauth/clients.js';
import type { SharedEphemeralStore } from '../../store/shared-state.js';

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
  /**
   * The browser that sent the /authorize request (BrowserSession.browserId): only that browser may sign in,
   * see the consent page and decide. Without this binding, a person could approve a request opened in
   * someone else's browser and hand that browser's client a session of their own (issue 15).
   */
  browserId: string;
  /** Tools the request's `scope` names (`tools:<name>`): ticked on the consent page for re-approval. */
  requestedTools?: string[];
  /** True once its browser came back for sign-in or consent: such a request is never evicted by new ones. */
  isEngaged: boolean;
  /** The tools exactly as last shown on the consent page: their fingerprints are what the person approves. */
  shownTools?: ConsentTool[];
  expiresAt: number;
}

export interface PendingLimits {
  /** Requests held at once (all clients). */
  maxRequests: number;
  /** Requests held at once for one client. */
  maxPerClient: number;
}

/** Why a new request could not be kept: every held request (of the client, or at all) is engaged. */
export type PendingRefusal = 'client-full' | 'full';

/**
 * Pending requests live in memory for a few minutes: their id is a random, single-use name (MCP
 * Security Best Practices: handles are names, not credentials) and they carry nothing secret.
 * When full, the oldest request nobody came back for is dropped; a request whose browser reached sign-in
 * or consent is never dropped to make room (a flood of /authorize cannot end a person's approval).
 */
export class PendingAuthorizations {
  private readonly requests = new Map<string, PendingAuthorization>();
  private readonly perClient = new Map<string, number>();

  constructor(
    private readonly lifetimeSeconds: number,
    private readonly limits: PendingLimits = { maxRequests: 10_000, maxPerClient: 1_000 },
    /**
     * Several worker processes (`gateway serve --workers N`): requests are also written to the database and
     * read from there, so the sign-in and consent steps may reach any worker. They carry nothing secret (see
     * above). The limits above then hold per worker.
     */
    private readonly shared?: SharedEphemeralStore,
  ) {}

  /** Writes a changed request through to the shared store (no-op for a single process). */
  save(pending: PendingAuthorization): void {
    this.shared?.put(pending.id, JSON.stringify(pending), pending.expiresAt);
  }

  add(request: Omit<PendingAuthorization, 'id' | 'expiresAt' | 'isEngaged'>, now = Date.now()): PendingAuthorization | PendingRefusal {
    const clientId = request.client.clientId;
    if ((this.perClient.get(clientId) ?? 0) >= this.limits.maxPerClient) {
      this.dropExpired(now);
      if ((this.perClient.get(clientId) ?? 0) >= this.limits.maxPerClient && !this.dropOldestUnengaged(clientId)) return 'client-full';
    }
    if (this.requests.size >= this.limits.maxRequests) {
      this.dropExpired(now);
      if (this.requests.size >= this.limits.maxRequests && !this.dropOldestUnengaged()) return 'full';
    }
    const pending: PendingAuthorization = {
      ...request,
      id: randomBytes(24).toString('base64url'),
      isEngaged: false,
      expiresAt: now + this.lifetimeSeconds * 1000,
    };
    this.requests.set(pending.id, pending);
    this.perClient.set(clientId, (this.perClient.get(clientId) ?? 0) + 1);
    this.save(pending);
    return pending;
  }

  find(id: string | null | undefined, now = Date.now()): PendingAuthorization | undefined {
    if (!id) return undefined;
    let pending = this.requests.get(id);
    if (this.shared) {
      // The database is the truth: another worker may have changed or decided this request.
      const text = this.shared.get(id, now);
      if (text === undefined) {
        this.remove(id);
        return undefined;
      }
      const stored = JSON.parse(text) as PendingAuthorization;
      if (pending) Object.assign(pending, stored);
      else pending = stored;
    }
    if (!pending) return undefined;
    if (pending.expiresAt <= now) {
      this.remove(id);
      return undefined;
    }
    return pending;
  }

  /**
   * Single use: a decision removes the request. False when it was already gone (with workers: another
   * worker decided it first), so a request is decided once.
   */
  take(id: string): boolean {
    const wasHere = this.requests.has(id);
    this.remove(id);
    return this.shared ? this.shared.delete(id) : wasHere;
  }

  get size(): number {
    return this.requests.size;
  }

  private remove(id: string): void {
    const pending = this.requests.get(id);
    if (!pending) return;
    this.requests.delete(id);
    const clientId = pending.client.clientId;
    const count = (this.perClient.get(clientId) ?? 1) - 1;
    if (count <= 0) this.perClient.delete(clientId);
    else this.perClient.set(clientId, count);
  }

  private dropExpired(now: number): void {
    for (const [id, pending] of this.requests) if (pending.expiresAt <= now) this.remove(id);
  }

  /** Drops the oldest (Map order) request nobody came back for, of one client or of any; false if none. */
  private dropOldestUnengaged(clientId?: string): boolean {
    for (const [id, pending] of this.requests) {
      if (pending.isEngaged || (clientId !== undefined && pending.client.clientId !== clientId)) continue;
      this.remove(id);
      return true;
    }
    return false;
  }
}
