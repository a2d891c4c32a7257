import { randomBytes } from 'node:crypto';
import type { ConsentTool } from './consent-tool.js';
import type { OAuthClient } from '../oauth/clients.js';
import type { EphemeralState } from '../../store/ephemeral-state.js';

/** The ephemeral state kind of pending authorizations. */
const KIND = 'pending-authorization';

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
 * Pending requests live for a few minutes in the ephemeral state port (store/ephemeral-state.ts): this process's
 * memory, or, with several worker processes (`gateway serve --workers N`), the database, so the sign-in and consent
 * steps may reach any worker. Their id is a random, single-use name (MCP Security Best Practices: handles are
 * names, not credentials) and they carry nothing secret.
 * The limits hold per process, over the requests it added: when full, the oldest request nobody came back for is
 * dropped (from the store too); a request whose browser reached sign-in or consent is never dropped to make room
 * (a flood of /authorize cannot end a person's approval).
 */
export class PendingAuthorizations {
  /** The requests this process added (and still holds), oldest first: what the limits count. */
  private readonly requests = new Map<string, PendingAuthorization>();
  private readonly perClient = new Map<string, number>();

  constructor(
    private readonly lifetimeSeconds: number,
    private readonly state: EphemeralState,
    private readonly limits: PendingLimits = { maxRequests: 10_000, maxPerClient: 1_000 },
  ) {}

  /** Writes a changed request to the store. */
  async save(pending: PendingAuthorization): Promise<void> {
    await this.state.put(KIND, pending.id, JSON.stringify(pending), pending.expiresAt);
  }

  async add(
    request: Omit<PendingAuthorization, 'id' | 'expiresAt' | 'isEngaged'>,
    now = Date.now(),
  ): Promise<PendingAuthorization | PendingRefusal> {
    const clientId = request.client.clientId;
    if ((this.perClient.get(clientId) ?? 0) >= this.limits.maxPerClient) {
      this.dropExpired(now);
      if ((this.perClient.get(clientId) ?? 0) >= this.limits.maxPerClient && !(await this.dropOldestUnengaged(clientId))) {
        return 'client-full';
      }
    }
    if (this.requests.size >= this.limits.maxRequests) {
      this.dropExpired(now);
      if (this.requests.size >= this.limits.maxRequests && !(await this.dropOldestUnengaged())) return 'full';
    }
    const pending: PendingAuthorization = {
      ...request,
      id: randomBytes(24).toString('base64url'),
      isEngaged: false,
      expiresAt: now + this.lifetimeSeconds * 1000,
    };
    this.requests.set(pending.id, pending);
    this.perClient.set(clientId, (this.perClient.get(clientId) ?? 0) + 1);
    await this.save(pending);
    return pending;
  }

  async find(id: string | null | undefined, now = Date.now()): Promise<PendingAuthorization | undefined> {
    if (!id) return undefined;
    // The store is the truth: another worker may have changed or decided this request.
    const text = await this.state.get(KIND, id, now);
    if (text === undefined) {
      this.remove(id);
      return undefined;
    }
    const stored = JSON.parse(text) as PendingAuthorization;
    const pending = this.requests.get(id);
    if (!pending) return stored;
    Object.assign(pending, stored);
    return pending;
  }

  /**
   * Single use: a decision takes the request out of the store. False when it was already gone (another
   * submission, or another worker, decided it first), so a request is decided once.
   */
  async take(id: string, now = Date.now()): Promise<boolean> {
    this.remove(id);
    return (await this.state.take(KIND, id, now)) !== undefined;
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
  private async dropOldestUnengaged(clientId?: string): Promise<boolean> {
    for (const [id, pending] of this.requests) {
      if (pending.isEngaged || (clientId !== undefined && pending.client.clientId !== clientId)) continue;
      this.remove(id);
      await this.state.delete(KIND, id);
      return true;
    }
    return false;
  }
}
