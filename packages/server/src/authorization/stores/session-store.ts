import { createHash, randomBytes } from 'node:crypto';
import { GatewayError } from '@gateway/core';
import type { Migration, SqliteDatabase } from '../../store/database.js';

/**
 * Sessions, authorization codes, refresh tokens and dynamically registered clients, in the gateway's
 * SQLite database. Only hashes of codes, refresh tokens and client secrets are stored: a copy of the
 * database lets no one act as a client or a person.
 */
export const sessionMigrations: Migration[] = [
  {
    id: 'oauth-001',
    sql: `
      CREATE TABLE oauth_sessions (
        number INTEGER PRIMARY KEY AUTOINCREMENT,
        subject TEXT NOT NULL,
        person_name TEXT NOT NULL,
        client_id TEXT NOT NULL,
        client_name TEXT NOT NULL,
        tools TEXT NOT NULL,
        logins TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        revoked_at INTEGER,
        revoked_reason TEXT
      );
      CREATE TABLE oauth_codes (
        code_hash TEXT PRIMARY KEY,
        session_number INTEGER NOT NULL REFERENCES oauth_sessions(number),
        client_id TEXT NOT NULL,
        redirect_uri TEXT NOT NULL,
        code_challenge TEXT NOT NULL,
        resource TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER
      );
      CREATE TABLE oauth_refresh_tokens (
        token_hash TEXT PRIMARY KEY,
        session_number INTEGER NOT NULL REFERENCES oauth_sessions(number),
        client_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER
      );
      CREATE INDEX oauth_refresh_tokens_session ON oauth_refresh_tokens(session_number);
      CREATE TABLE oauth_clients (
        client_id TEXT PRIMARY KEY,
        secret_hash TEXT,
        metadata TEXT NOT NULL,
        registered_from TEXT,
        created_at INTEGER NOT NULL,
        last_authorized_at INTEGER,
        expires_at INTEGER NOT NULL
      );
    `,
  },
  {
    // Refresh token rotation records its successor, so a replay within the grace window can be told apart
    // from theft (docs/authorization.md › Refresh token rotation); `superseded` marks a successor that was
    // replaced without ever being used, which gets no grace of its own.
    id: 'oauth-002',
    sql: `
      ALTER TABLE oauth_refresh_tokens ADD COLUMN successor_hash TEXT;
      ALTER TABLE oauth_refresh_tokens ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    // Re-approval (docs/authorization.md): when /mcp asked the client to approve changed tools again
    // (403 insufficient_scope), and which ones. The refresh grant of such a session is refused, so a
    // client that refreshes before re-authorizing (the v1 SDK does) is led to consent all the same.
    id: 'oauth-003',
    sql: `
      ALTER TABLE oauth_sessions ADD COLUMN reapproval_requested_at INTEGER;
      ALTER TABLE oauth_sessions ADD COLUMN reapproval_tools TEXT;
    `,
  },
];

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

export type SessionState = 'open' | 'expired' | 'revoked';

interface SessionRow {
  number: number;
  subject: string;
  person_name: string;
  client_id: string;
  client_name: string;
  tools: string;
  logins: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  revoked_reason: string | null;
  reapproval_requested_at: number | null;
  reapproval_tools: string | null;
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

interface RefreshRow {
  session_number: number;
  client_id: string;
  expires_at: number;
  used_at: number | null;
  successor_hash: string | null;
  superseded: number;
}

export interface StoredClient {
  clientId: string;
  secretHash: string | null;
  metadata: Record<string, unknown>;
  createdAt: number;
  lastAuthorizedAt: number | null;
  expiresAt: number;
}

/** SHA-256 of a high-entropy token (codes, refresh tokens, client secrets): no salt needed at 256 bits. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}

/** A fresh 256-bit token, base64url. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

export function sessionNumber(sessionId: string): number | undefined {
  const match = /^session-([1-9]\d{0,15})$/.exec(sessionId);
  return match ? Number(match[1]) : undefined;
}

function sessionId(number: number): string {
  return `session-${number}`;
}

function toRecord(row: SessionRow): SessionRecord {
  return {
    id: sessionId(row.number),
    subject: row.subject,
    personName: row.person_name,
    clientId: row.client_id,
    clientName: row.client_name,
    tools: JSON.parse(row.tools) as SessionTool[],
    logins: JSON.parse(row.logins) as string[],
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    revokedReason: row.revoked_reason,
    reapprovalRequestedAt: row.reapproval_requested_at,
    reapprovalTools: row.reapproval_tools ? (JSON.parse(row.reapproval_tools) as string[]) : [],
  };
}

export function sessionState(session: Pick<SessionRecord, 'expiresAt' | 'revokedAt'>, now = Date.now()): SessionState {
  if (session.revokedAt !== null) return 'revoked';
  return session.expiresAt <= now ? 'expired' : 'open';
}

/** The session store over the gateway database; the server and the `gateway sessions` CLI both use it. */
export class SessionStore {
  private readonly statements;
  private readonly revocationListeners = new Set<(sessionId: string) => void>();

  constructor(private readonly database: SqliteDatabase) {
    this.statements = {
      insertSession: database.prepare(
        `INSERT INTO oauth_sessions (subject, person_name, client_id, client_name, tools, logins, created_at, expires_at)
         VALUES (@subject, @personName, @clientId, @clientName, @tools, @logins, @createdAt, @expiresAt)`,
      ),
      session: database.prepare('SELECT * FROM oauth_sessions WHERE number = ?'),
      sessionState: database.prepare('SELECT expires_at, revoked_at FROM oauth_sessions WHERE number = ?'),
      sessions: database.prepare('SELECT * FROM oauth_sessions ORDER BY number'),
      latestOpen: database.prepare(
        'SELECT * FROM oauth_sessions WHERE subject = ? AND client_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY number DESC LIMIT 1',
      ),
      revoke: database.prepare(
        'UPDATE oauth_sessions SET revoked_at = ?, revoked_reason = ? WHERE number = ? AND revoked_at IS NULL',
      ),
      requestReapproval: database.prepare(
        'UPDATE oauth_sessions SET reapproval_requested_at = COALESCE(reapproval_requested_at, ?), reapproval_tools = ? WHERE number = ?',
      ),
      insertCode: database.prepare(
        `INSERT INTO oauth_codes (code_hash, session_number, client_id, redirect_uri, code_challenge, resource, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      code: database.prepare('SELECT * FROM oauth_codes WHERE code_hash = ?'),
      useCode: database.prepare('UPDATE oauth_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL'),
      insertRefresh: database.prepare(
        `INSERT INTO oauth_refresh_tokens (token_hash, session_number, client_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
      ),
      refresh: database.prepare('SELECT * FROM oauth_refresh_tokens WHERE token_hash = ?'),
      useRefresh: database.prepare('UPDATE oauth_refresh_tokens SET used_at = ?, successor_hash = ? WHERE token_hash = ? AND used_at IS NULL'),
      replaceSuccessor: database.prepare('UPDATE oauth_refresh_tokens SET successor_hash = ? WHERE token_hash = ?'),
      supersede: database.prepare('UPDATE oauth_refresh_tokens SET used_at = ?, superseded = 1 WHERE token_hash = ? AND used_at IS NULL'),
      deleteStale: database.prepare(
        'DELETE FROM oauth_codes WHERE expires_at < ?',
      ),
      deleteStaleRefresh: database.prepare('DELETE FROM oauth_refresh_tokens WHERE expires_at < ?'),
      insertClient: database.prepare(
        `INSERT INTO oauth_clients (client_id, secret_hash, metadata, registered_from, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      client: database.prepare('SELECT * FROM oauth_clients WHERE client_id = ? AND expires_at > ?'),
      touchClient: database.prepare('UPDATE oauth_clients SET last_authorized_at = ?, expires_at = ? WHERE client_id = ?'),
      deleteExpiredClients: database.prepare('DELETE FROM oauth_clients WHERE expires_at <= ?'),
      registrationsSince: database.prepare('SELECT COUNT(*) AS count FROM oauth_clients WHERE registered_from = ? AND created_at > ?'),
    };
  }

  /** Called with the session id whenever a session is revoked through this store (cache invalidation). */
  onRevoke(listener: (sessionId: string) => void): () => void {
    this.revocationListeners.add(listener);
    return () => this.revocationListeners.delete(listener);
  }

  openSession(input: Omit<SessionRecord, 'id' | 'createdAt' | 'revokedAt' | 'revokedReason' | 'reapprovalRequestedAt' | 'reapprovalTools'>, now = Date.now()): SessionRecord {
    const result = this.statements.insertSession.run({
      subject: input.subject,
      personName: input.personName,
      clientId: input.clientId,
      clientName: input.clientName,
      tools: JSON.stringify(input.tools),
      logins: JSON.stringify(input.logins),
      createdAt: now,
      expiresAt: input.expiresAt,
    });
    return this.session(sessionId(Number(result.lastInsertRowid)))!;
  }

  session(id: string): SessionRecord | undefined {
    const number = sessionNumber(id);
    if (number === undefined) return undefined;
    const row = this.statements.session.get(number) as SessionRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  /** The cheap per-request check: one primary-key lookup of two integers. */
  isSessionOpen(id: string, now = Date.now()): boolean {
    const number = sessionNumber(id);
    if (number === undefined) return false;
    const row = this.statements.sessionState.get(number) as { expires_at: number; revoked_at: number | null } | undefined;
    return row !== undefined && row.revoked_at === null && row.expires_at > now;
  }

  /** The newest open session a person approved for a client (what a re-approval starts from). */
  latestOpenSession(subject: string, clientId: string, now = Date.now()): SessionRecord | undefined {
    const row = this.statements.latestOpen.get(subject, clientId, now) as SessionRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  listSessions(): SessionRecord[] {
    return (this.statements.sessions.all() as SessionRow[]).map(toRecord);
  }

  /** Revokes a session (idempotent); every token issued for it stops working at once. */
  revokeSession(id: string, reason: string, now = Date.now()): SessionRecord {
    const number = sessionNumber(id);
    const existing = this.session(id);
    if (number === undefined || !existing) {
      throw new GatewayError('SESSION_NOT_FOUND', `no session named '${id}'; \`gateway sessions list\` shows them`);
    }
    this.statements.revoke.run(now, reason, number);
    for (const listener of this.revocationListeners) listener(id);
    return this.session(id)!;
  }

  /**
   * Records that /mcp asked the client to have `tools` approved again (kept with the ones asked before).
   * Written only when the set grows, so a client retrying a stale tool costs no write per call.
   */
  requestReapproval(id: string, tools: readonly string[], now = Date.now()): void {
    const number = sessionNumber(id);
    const existing = this.session(id);
    if (number === undefined || !existing) return;
    const merged = [...new Set([...existing.reapprovalTools, ...tools])].sort();
    if (existing.reapprovalRequestedAt !== null && merged.length === existing.reapprovalTools.length) return;
    this.statements.requestReapproval.run(now, JSON.stringify(merged), number);
  }

  saveCode(code: string, value: Omit<StoredCode, 'usedAt'>): void {
    this.statements.insertCode.run(
      hashToken(code),
      sessionNumber(value.sessionId),
      value.clientId,
      value.redirectUri,
      value.codeChallenge,
      value.resource,
      value.expiresAt,
    );
  }

  /**
   * Marks a code used and returns what it was issued for, with `alreadyUsed` when this is a second
   * redemption (OAuth 2.1 §4.1.3: the caller then refuses and revokes what the code produced).
   */
  redeemCode(code: string, now = Date.now()): (StoredCode & { alreadyUsed: boolean }) | undefined {
    return this.database.transaction(() => {
      const hash = hashToken(code);
      const row = this.statements.code.get(hash) as
        | { session_number: number; client_id: string; redirect_uri: string; code_challenge: string; resource: string; expires_at: number; used_at: number | null }
        | undefined;
      if (!row) return undefined;
      const alreadyUsed = row.used_at !== null;
      if (!alreadyUsed) this.statements.useCode.run(now, hash);
      return {
        sessionId: sessionId(row.session_number),
        clientId: row.client_id,
        redirectUri: row.redirect_uri,
        codeChallenge: row.code_challenge,
        resource: row.resource,
        expiresAt: row.expires_at,
        usedAt: row.used_at,
        alreadyUsed,
      };
    })();
  }

  saveRefreshToken(token: string, value: { sessionId: string; clientId: string; expiresAt: number }, now = Date.now()): void {
    this.statements.insertRefresh.run(hashToken(token), sessionNumber(value.sessionId), value.clientId, now, value.expiresAt);
  }

  /**
   * Refresh token rotation in one SQLite transaction: the presented token is retired and its successor
   * stored together, so a crash leaves either the old token usable or the successor stored — never a
   * retired token without a successor. A token presented again within `graceMs` of its rotation, while
   * its successor has never been used, gets a fresh successor (the unused one is superseded): the client
   * most likely never received the answer. Anything else is reuse (RFC 9700 §4.14.2).
   */
  rotateRefreshToken(token: string, successor: string, options: { graceMs: number; now?: number }): RefreshRotation {
    const now = options.now ?? Date.now();
    return this.database.transaction((): RefreshRotation => {
      const hash = hashToken(token);
      const row = this.statements.refresh.get(hash) as RefreshRow | undefined;
      if (!row) return { outcome: 'unknown' };
      const session = sessionId(row.session_number);
      const successorHash = hashToken(successor);
      if (row.used_at === null) {
        this.statements.useRefresh.run(now, successorHash, hash);
        this.statements.insertRefresh.run(successorHash, row.session_number, row.client_id, now, row.expires_at);
        return { outcome: 'rotated', sessionId: session };
      }
      if (row.superseded === 1) return { outcome: 'reused', sessionId: session, why: 'a superseded refresh token was presented' };
      if (now - row.used_at > options.graceMs) return { outcome: 'reused', sessionId: session, why: 'a rotated refresh token was presented after the grace window' };
      const next = row.successor_hash === null ? undefined : (this.statements.refresh.get(row.successor_hash) as RefreshRow | undefined);
      if (!next || next.used_at !== null) return { outcome: 'reused', sessionId: session, why: 'a rotated refresh token was presented after its successor was used' };
      this.statements.supersede.run(now, row.successor_hash);
      this.statements.replaceSuccessor.run(successorHash, hash);
      this.statements.insertRefresh.run(successorHash, row.session_number, row.client_id, now, row.expires_at);
      return { outcome: 'reissued', sessionId: session };
    })();
  }

  /** Looks a refresh token up without using it (revocation endpoint). */
  findRefreshToken(token: string): StoredRefreshToken | undefined {
    const row = this.statements.refresh.get(hashToken(token)) as
      | { session_number: number; client_id: string; expires_at: number; used_at: number | null }
      | undefined;
    return row ? { sessionId: sessionId(row.session_number), clientId: row.client_id, expiresAt: row.expires_at, usedAt: row.used_at } : undefined;
  }

  registerClient(client: { clientId: string; secretHash: string | null; metadata: Record<string, unknown>; registeredFrom: string; expiresAt: number }, now = Date.now()): void {
    this.statements.insertClient.run(client.clientId, client.secretHash, JSON.stringify(client.metadata), client.registeredFrom, now, client.expiresAt);
  }

  registeredClient(clientId: string, now = Date.now()): StoredClient | undefined {
    const row = this.statements.client.get(clientId, now) as
      | { client_id: string; secret_hash: string | null; metadata: string; created_at: number; last_authorized_at: number | null; expires_at: number }
      | undefined;
    if (!row) return undefined;
    return {
      clientId: row.client_id,
      secretHash: row.secret_hash,
      metadata: JSON.parse(row.metadata) as Record<string, unknown>,
      createdAt: row.created_at,
      lastAuthorizedAt: row.last_authorized_at,
      expiresAt: row.expires_at,
    };
  }

  /** A successful authorization keeps a dynamic registration alive for another idle period. */
  touchClient(clientId: string, expiresAt: number, now = Date.now()): void {
    this.statements.touchClient.run(now, expiresAt, clientId);
  }

  registrationsFrom(address: string, since: number): number {
    return (this.statements.registrationsSince.get(address, since) as { count: number }).count;
  }

  /** Deletes expired codes, refresh tokens and registrations; sessions stay as history. */
  purge(now = Date.now()): void {
    this.statements.deleteStale.run(now - 86_400_000);
    this.statements.deleteStaleRefresh.run(now);
    this.statements.deleteExpiredClients.run(now);
  }
}
