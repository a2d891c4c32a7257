import { GatewayError, type SessionState } from '@gateway/core';
import type { SqliteDatabase } from '../../store/database.js';

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

export type { SessionState };

/** What opening a session takes: the approval itself; the id, times and re-approval state are the store's. */
export type NewSession = Omit<
  SessionRecord,
  'id' | 'createdAt' | 'revokedAt' | 'revokedReason' | 'reapprovalRequestedAt' | 'reapprovalTools'
>;

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

/** The row number of `session-<n>` (codes and refresh tokens refer to their session by it). */
export function sessionNumber(sessionId: string): number | undefined {
  const match = /^session-([1-9]\d{0,15})$/.exec(sessionId);
  return match ? Number(match[1]) : undefined;
}

export function sessionId(number: number): string {
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

/**
 * The approved sessions (table `oauth_sessions`): what a person allowed a client, until when. Sessions are
 * never deleted (they are the history `gateway sessions list --all` shows); revoking one ends every token
 * issued for it.
 */
export class Sessions {
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

  open(input: NewSession, now = Date.now()): SessionRecord {
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
    return this.find(sessionId(Number(result.lastInsertRowid)))!;
  }

  find(id: string): SessionRecord | undefined {
    const number = sessionNumber(id);
    if (number === undefined) return undefined;
    const row = this.statements.session.get(number) as SessionRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  /** The cheap per-request check: one primary-key lookup of two integers. */
  isOpen(id: string, now = Date.now()): boolean {
    return this.state(id, now) === 'open';
  }

  /** Where a session stands now (the same lookup); undefined for a session this store never opened. */
  state(id: string, now = Date.now()): SessionState | undefined {
    const number = sessionNumber(id);
    if (number === undefined) return undefined;
    const row = this.statements.sessionState.get(number) as { expires_at: number; revoked_at: number | null } | undefined;
    return row ? sessionState({ expiresAt: row.expires_at, revokedAt: row.revoked_at }, now) : undefined;
  }

  /** The newest open session a person approved for a client (what a re-approval starts from). */
  latestOpen(subject: string, clientId: string, now = Date.now()): SessionRecord | undefined {
    const row = this.statements.latestOpen.get(subject, clientId, now) as SessionRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  list(): SessionRecord[] {
    return (this.statements.sessions.all() as SessionRow[]).map(toRecord);
  }

  /** Revokes a session (idempotent); every token issued for it stops working at once. */
  revoke(id: string, reason: string, now = Date.now()): SessionRecord {
    const number = sessionNumber(id);
    const existing = this.find(id);
    if (number === undefined || !existing) {
      throw new GatewayError('SESSION_NOT_FOUND', `no session named '${id}'; \`gateway sessions list\` shows them`);
    }
    this.statements.revoke.run(now, reason, number);
    for (const listener of this.revocationListeners) listener(id);
    return this.find(id)!;
  }

  /**
   * Records that /mcp asked the client to have `tools` approved again (kept with the ones asked before).
   * Written only when the set grows, so a client retrying a stale tool costs no write per call.
   */
  requestReapproval(id: string, tools: readonly string[], now = Date.now()): void {
    const number = sessionNumber(id);
    const existing = this.find(id);
    if (number === undefined || !existing) return;
    const merged = [...new Set([...existing.reapprovalTools, ...tools])].sort();
    if (existing.reapprovalRequestedAt !== null && merged.length === existing.reapprovalTools.length) return;
    this.statements.requestReapproval.run(now, JSON.stringify(merged), number);
  }
}
