import { GatewayError } from '@gateway/core';
import type { SqliteDatabase } from '../../../store/sqlite/database.js';
import type { NewSession, SessionRecord, SessionState, SessionTool, Sessions } from '../ports.js';
import { sessionId, sessionNumber, sessionState } from '../sessions.js';

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

/** The sessions port (../ports.ts) over table `oauth_sessions`. */
export class SqliteSessions implements Sessions {
  private readonly statements;
  private readonly revocationListeners = new Set<(sessionId: string) => void>();

  constructor(database: SqliteDatabase) {
    this.statements = {
      insertSession: database.prepare(
        `INSERT INTO oauth_sessions (subject, person_name, client_id, client_name, tools, logins, created_at, expires_at)
         VALUES (@subject, @personName, @clientId, @clientName, @tools, @logins, @createdAt, @expiresAt)`,
      ),
      session: database.prepare('SELECT * FROM oauth_sessions WHERE number = ?'),
      sessionState: database.prepare('SELECT expires_at, revoked_at FROM oauth_sessions WHERE number = ?'),
      sessions: database.prepare('SELECT * FROM oauth_sessions ORDER BY number'),
      latestOpen: database.prepare(
        'SELECT * FROM oauth_sessions WHERE subject = ? AND client_id = ? AND revoked_at IS NULL AND ' +
          'expires_at > ? ORDER BY number DESC LIMIT 1',
      ),
      revoke: database.prepare('UPDATE oauth_sessions SET revoked_at = ?, revoked_reason = ? WHERE number = ? AND revoked_at IS NULL'),
      requestReapproval: database.prepare(
        'UPDATE oauth_sessions SET reapproval_requested_at = COALESCE(reapproval_requested_at, ?), reapproval_tools = ? WHERE number = ?',
      ),
    };
  }

  /** Called with the session id whenever a session is revoked through this store (cache invalidation). */
  onRevoke(listener: (sessionId: string) => void): () => void {
    this.revocationListeners.add(listener);
    return () => this.revocationListeners.delete(listener);
  }

  async open(input: NewSession, now = Date.now()): Promise<SessionRecord> {
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
    return this.read(sessionId(Number(result.lastInsertRowid)))!;
  }

  async find(id: string): Promise<SessionRecord | undefined> {
    return this.read(id);
  }

  private read(id: string): SessionRecord | undefined {
    const number = sessionNumber(id);
    if (number === undefined) return undefined;
    const row = this.statements.session.get(number) as SessionRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  /** One primary-key lookup of two integers. */
  async state(id: string, now = Date.now()): Promise<SessionState | undefined> {
    const number = sessionNumber(id);
    if (number === undefined) return undefined;
    const row = this.statements.sessionState.get(number) as { expires_at: number; revoked_at: number | null } | undefined;
    return row ? sessionState({ expiresAt: row.expires_at, revokedAt: row.revoked_at }, now) : undefined;
  }

  async latestOpen(subject: string, clientId: string, now = Date.now()): Promise<SessionRecord | undefined> {
    const row = this.statements.latestOpen.get(subject, clientId, now) as SessionRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  async list(): Promise<SessionRecord[]> {
    return (this.statements.sessions.all() as SessionRow[]).map(toRecord);
  }

  async revoke(id: string, reason: string, now = Date.now()): Promise<SessionRecord> {
    const number = sessionNumber(id);
    const existing = this.read(id);
    if (number === undefined || !existing) {
      throw new GatewayError('SESSION_NOT_FOUND', `no session named '${id}'; \`gateway sessions list\` shows them`);
    }
    this.statements.revoke.run(now, reason, number);
    for (const listener of this.revocationListeners) listener(id);
    return this.read(id)!;
  }

  /** Written only when the set grows, so a client retrying a stale tool costs no write per call. */
  async requestReapproval(id: string, tools: readonly string[], now = Date.now()): Promise<void> {
    const number = sessionNumber(id);
    const existing = this.read(id);
    if (number === undefined || !existing) return;
    const merged = [...new Set([...existing.reapprovalTools, ...tools])].sort();
    if (existing.reapprovalRequestedAt !== null && merged.length === existing.reapprovalTools.length) return;
    this.statements.requestReapproval.run(now, JSON.stringify(merged), number);
  }
}
