import type {
  AuthorizationCodes,
  AuthorizationStores,
  NewSession,
  RefreshTokens,
  RegisteredClients,
  SessionRecord,
  Sessions,
} from './ports.js';

export type {
  AuthorizationCodes,
  AuthorizationStores,
  NewClient,
  NewSession,
  RefreshRotation,
  RefreshTokens,
  RegisteredClients,
  SessionRecord,
  Sessions,
  SessionState,
  SessionTool,
  StoredClient,
  StoredCode,
  StoredRefreshToken,
} from './ports.js';
export { sessionNumber, sessionState } from './sessions.js';
export { hashToken, randomToken } from './tokens.js';

/**
 * The authorization area's four stores (ports.ts) of one backing database, as one object: the composition root
 * builds it over an adapter (./sqlite/), the admin API and `gateway sessions` tests hold it for the session
 * methods below, which delegate to `sessions`.
 */
export class SessionStore {
  readonly sessions: Sessions;
  readonly codes: AuthorizationCodes;
  readonly refreshTokens: RefreshTokens;
  readonly clients: RegisteredClients;

  constructor(stores: AuthorizationStores) {
    this.sessions = stores.sessions;
    this.codes = stores.codes;
    this.refreshTokens = stores.refreshTokens;
    this.clients = stores.clients;
  }

  /** Called with the session id whenever a session is revoked through this store (cache invalidation). */
  onRevoke(listener: (sessionId: string) => void): () => void {
    return this.sessions.onRevoke(listener);
  }

  openSession(input: NewSession, now = Date.now()): Promise<SessionRecord> {
    return this.sessions.open(input, now);
  }

  session(id: string): Promise<SessionRecord | undefined> {
    return this.sessions.find(id);
  }

  async isSessionOpen(id: string, now = Date.now()): Promise<boolean> {
    return (await this.sessions.state(id, now)) === 'open';
  }

  latestOpenSession(subject: string, clientId: string, now = Date.now()): Promise<SessionRecord | undefined> {
    return this.sessions.latestOpen(subject, clientId, now);
  }

  listSessions(): Promise<SessionRecord[]> {
    return this.sessions.list();
  }

  revokeSession(id: string, reason: string, now = Date.now()): Promise<SessionRecord> {
    return this.sessions.revoke(id, reason, now);
  }

  requestReapproval(id: string, tools: readonly string[], now = Date.now()): Promise<void> {
    return this.sessions.requestReapproval(id, tools, now);
  }

  /** Deletes expired codes, refresh tokens and registrations; sessions stay as history. */
  async purge(now = Date.now()): Promise<void> {
    await this.codes.purge(now);
    await this.refreshTokens.purge(now);
    await this.clients.purge(now);
  }
}
