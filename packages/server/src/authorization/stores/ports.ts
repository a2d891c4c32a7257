import type { SessionState } from '@gateway/core';
import type { EphemeralState } from '../../store/ephemeral-state.js';

/**
 * The authorization area's storage ports: what its handlers, consent pages, /mcp authorizer and the admin API
 * need from storage, as awaitable interfaces named for the domain. An adapter implements them (SQLite in
 * ./sqlite/); ./contract/ holds the suites every adapter must pass. An operation that must be atomic (redeeming
 * a code once, rotating a refresh token with reuse detection, registering within the per-address limit) is ONE
 * method here, so an adapter runs it in one transaction: never a read, then a write, across two calls.
 */

export type { SessionState };

/** One approved tool: its name and the fingerprint the person saw at consent. */
export interface SessionTool {
  name: string;
  fingerprint: string;
}

export interface SessionRecord {
  /** `session-<n>`. */
  id: string;
  subject: string;
  personName: string;
  clientId: string;
  clientName: string;
  tools: SessionTool[];
  logins: string[];
  /** Epoch milliseconds. */
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
  revokedReason: string | null;
  /** When /mcp asked the client to have changed tools approved again (epoch ms), and which tools. */
  reapprovalRequestedAt: number | null;
  reapprovalTools: string[];
}

/** What opening a session takes: the approval itself; the id, times and re-approval state are the store's. */
export type NewSession = Omit<
  SessionRecord,
  'id' | 'createdAt' | 'revokedAt' | 'revokedReason' | 'reapprovalRequestedAt' | 'reapprovalTools'
>;

/**
 * The approved sessions: what a person allowed a client, until when. Sessions are never deleted (they are the
 * history `gateway sessions list --all` shows); revoking one ends every token issued for it.
 */
export interface Sessions {
  /** Opens a session; its id is `session-<n>`, n increasing. */
  open(input: NewSession, now?: number): Promise<SessionRecord>;
  find(id: string): Promise<SessionRecord | undefined>;
  /** Where a session stands now (the per-request check: keep it one key lookup); undefined for one never opened. */
  state(id: string, now?: number): Promise<SessionState | undefined>;
  /** The newest open session a person approved for a client (what a re-approval starts from). */
  latestOpen(subject: string, clientId: string, now?: number): Promise<SessionRecord | undefined>;
  /** Every session, oldest first. */
  list(): Promise<SessionRecord[]>;
  /**
   * Revokes a session (idempotent: the first reason and time stay); SESSION_NOT_FOUND for an unknown id.
   * Tells the `onRevoke` listeners of this process.
   */
  revoke(id: string, reason: string, now?: number): Promise<SessionRecord>;
  /**
   * Records that /mcp asked the client to have `tools` approved again, kept with the ones asked before; the
   * time of the first request stays. Nothing for an unknown session.
   */
  requestReapproval(id: string, tools: readonly string[], now?: number): Promise<void>;
  /** Called with the session id whenever a session is revoked through this store (cache invalidation). */
  onRevoke(listener: (sessionId: string) => void): () => void;
}

export interface StoredCode {
  sessionId: string;
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  expiresAt: number;
  usedAt: number | null;
}

/** Authorization codes, kept by hash: issued at consent for a session just opened, redeemed once. */
export interface AuthorizationCodes {
  save(code: string, value: Omit<StoredCode, 'usedAt'>): Promise<void>;
  /**
   * Atomically marks a code used and returns what it was issued for, with `alreadyUsed` when this is a second
   * redemption (OAuth 2.1 §4.1.3: the caller then refuses and revokes what the code produced). Of two
   * concurrent redemptions exactly one sees `alreadyUsed: false`.
   */
  redeem(code: string, now?: number): Promise<(StoredCode & { alreadyUsed: boolean }) | undefined>;
  /** Deletes codes expired for more than a day (a late replay within it is still recognised). */
  purge(now?: number): Promise<void>;
}

export interface StoredRefreshToken {
  sessionId: string;
  clientId: string;
  expiresAt: number;
  usedAt: number | null;
}

/**
 * What presenting a refresh token did (RFC 9700 §4.14.2): `rotated` retired it for a successor;
 * `reissued` replaced its still-unused successor because it was presented again within the grace window;
 * `reused` means real reuse (the caller revokes the session); `unknown` is no token of ours.
 */
export type RefreshRotation =
  | { outcome: 'rotated' | 'reissued'; sessionId: string }
  | { outcome: 'reused'; sessionId: string; why: string }
  | { outcome: 'unknown' };

/** Refresh tokens, kept by hash, each with the successor its rotation issued. */
export interface RefreshTokens {
  save(token: string, value: { sessionId: string; clientId: string; expiresAt: number }, now?: number): Promise<void>;
  /**
   * Refresh token rotation as one atomic step: the presented token is retired and its successor stored
   * together (a crash leaves either the old token usable or the successor stored). A token presented again
   * within `graceMs` of its rotation, while its successor has never been used, gets a fresh successor (the
   * unused one is superseded: presenting it later is reuse). Anything else is reuse.
   */
  rotate(token: string, successor: string, options: { graceMs: number; now?: number }): Promise<RefreshRotation>;
  /** Looks a refresh token up without using it (revocation endpoint). */
  find(token: string): Promise<StoredRefreshToken | undefined>;
  /** Deletes expired refresh tokens. */
  purge(now?: number): Promise<void>;
}

export interface StoredClient {
  clientId: string;
  secretHash: string | null;
  metadata: Record<string, unknown>;
  createdAt: number;
  lastAuthorizedAt: number | null;
  expiresAt: number;
}

export interface NewClient {
  clientId: string;
  secretHash: string | null;
  metadata: Record<string, unknown>;
  /** The address bucket it registered from (the per-address registration limit). */
  registeredFrom: string;
  expiresAt: number;
}

/** Dynamically registered clients (RFC 7591). A registration expires when idle. */
export interface RegisteredClients {
  /**
   * Registers a client unless its address already registered `limit.max` clients after `limit.since`
   * (`limited`): the count and the insert are one atomic step, so concurrent registrations cannot pass it.
   */
  register(client: NewClient, limit: { since: number; max: number }, now?: number): Promise<'registered' | 'limited'>;
  /** An unexpired registration. */
  find(clientId: string, now?: number): Promise<StoredClient | undefined>;
  /** A successful authorization keeps a registration alive until `expiresAt`. */
  touch(clientId: string, expiresAt: number, now?: number): Promise<void>;
  /** Deletes expired registrations. */
  purge(now?: number): Promise<void>;
}

/** The four stores of one backing database, as an adapter builds them. */
export interface AuthorizationStores {
  sessions: Sessions;
  codes: AuthorizationCodes;
  refreshTokens: RefreshTokens;
  clients: RegisteredClients;
}

/** One throttle key's state: a count (tokens, failures) and the time it refers to (ms since the epoch). */
export interface ThrottleEntry {
  count: number;
  at: number;
  /** Attempts started and not yet finished (the sign-in throttle). */
  pending?: number;
}

/** The entries of the keys one `Throttles.update` named. Expired entries are never returned. */
export interface ThrottleEntries {
  /** The entry of a named key; asking for a key the update did not name throws. */
  get(key: string): ThrottleEntry | undefined;
  /** Kept until `expiresAt` (ms since the epoch): past it the entry carries no information. */
  set(key: string, entry: ThrottleEntry, expiresAt: number): void;
  delete(key: string): void;
}

/**
 * The throttles' counts (authorization/oauth/rate-limit.ts: /authorize rate limits, failed sign-ins, wrong admin
 * tokens), by throttle kind and key. Keys may name people (account names) or addresses: an adapter that writes
 * them anywhere lasting stores a digest of each, never the key itself.
 */
export interface Throttles {
  /**
   * Check-and-count as one atomic step: reads the entries of `keys` under `kind`, runs `decide` over them (it
   * reads and changes entries of those keys only), writes its changes and returns its result, with no other
   * change to those keys in between (across workers too). `decide` is synchronous and depends only on the entries
   * and its own arguments: an adapter may run it again when it retries the step.
   */
  update<R>(kind: string, keys: readonly string[], now: number, decide: (entries: ThrottleEntries) => R): Promise<R>;
}

/**
 * Everything the authorization area keeps, as the composition root builds it: the four stores of the database,
 * the throttles' counts and the sign-in and consent pages' ephemeral state (with workers, both in the database
 * the workers share; in one process, in its memory).
 */
export interface AuthorizationPorts extends AuthorizationStores {
  throttles: Throttles;
  ephemeral: EphemeralState;
}
