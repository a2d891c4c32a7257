import type { SqliteDatabase } from '../../store/database.js';
import { AuthorizationCodes } from './authorization-codes.js';
import { RegisteredClients } from './clients.js';
import { RefreshTokens } from './refresh-tokens.js';
import { Sessions, type NewSession, type SessionRecord } from './sessions.js';

export { sessionMigrations } from './migrations.js';
export { AuthorizationCodes, type StoredCode } from './authorization-codes.js';
export { RegisteredClients, type StoredClient } from './clients.js';
export { RefreshTokens, type RefreshRotation, type StoredRefreshToken } from './refresh-tokens.js';
export {
  Sessions,
  sessionNumber,
  sessionState,
  type NewSession,
  type SessionRecord,
  type SessionState,
  type SessionTool,
} from './sessions.js';
export { hashToken, randomToken } from './tokens.js';

/**
 * The authorization area's four stores over one gateway database, as one object (one per concept, each
 * owning its table): the composition root builds it, the admin API and `gateway sessions` tests hold it for
 * the session methods below, which delegate to `sessions`.
 */
export class SessionStore {
  readonly sessions: Sessions;
  readonly codes: AuthorizationCodes;
  readonly refreshTokens: RefreshTokens;
  readonly clients: RegisteredClients;

  constructor(database: SqliteDatabase) {
    this.sessions = new Sessions(database);
    this.codes = new AuthorizationCodes(database);
    this.refreshTokens = new RefreshTokens(database);
    this.clients = new RegisteredClients(database);
  }

  /** Called with the session id whenever a session is revoked through this store (cache invalidation). */
  onRevoke(listener: (sessionId: string) => void): () => void {
    return this.sessions.onRevoke(listener);
  }

  openSession(input: NewSession, now = Date.now()): SessionRecord {
    return this.sessions.open(input, now);
  }

  session(id: string): SessionRecord | undefined {
    return this.sessions.find(id);
  }

  isSessionOpen(id: string, now = Date.now()): boolean {
    return this.sessions.isOpen(id, now);
  }

  latestOpenSession(subject: string, clientId: string, now = Date.now()): SessionRecord | undefined {
    return this.sessions.latestOpen(subject, clientId, now);
  }

  listSessions(): SessionRecord[] {
    return this.sessions.list();
  }

  revokeSession(id: string, reason: string, now = Date.now()): SessionRecord {
    return this.sessions.revoke(id, reason, now);
  }

  requestReapproval(id: string, tools: readonly string[], now = Date.now()): void {
    this.sessions.requestReapproval(id, tools, now);
  }

  /** Deletes expired codes, refresh tokens and registrations; sessions stay as history. */
  purge(now = Date.now()): void {
    this.codes.purge(now);
    this.refreshTokens.purge(now);
    this.clients.purge(now);
  }
}
