import { GatewayError } from '@gateway/core';
import type { PostgresPool } from '../../../store/postgres/database.js';
import type { NewSession, SessionRecord, SessionState, SessionTool, Sessions } from '../ports.js';
import { sessionId, sessionNumber, sessionState } from '../sessions.js';

interface SessionRow {
  number: number;
  subject: string;
  person_name: string;
  client_id: string;
  client_name: string;
  tools: SessionTool[];
  logins: string[];
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  revoked_reason: string | null;
  reapproval_requested_at: number | null;
  reapproval_tools: string[] | null;
}

function toRecord(row: SessionRow): SessionRecord {
  return {
    id: sessionId(row.number),
    subject: row.subject,
    personName: row.person_name,
    clientId: row.client_id,
    clientName: row.client_name,
    tools: row.tools,
    logins: row.logins,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    revokedReason: row.revoked_reason,
    reapprovalRequestedAt: row.reapproval_requested_at,
    reapprovalTools: row.reapproval_tools ?? [],
  };
}

/**
 * The sessions port (../ports.ts) over table `oauth_sessions`. Each step is one statement: revoking keeps the
 * first time and reason (`revoked_at IS NULL`), and a re-approval request merges its tools into the stored set in
 * the UPDATE itself, so concurrent requests from several replicas lose none.
 */
export class PostgresSessions implements Sessions {
  private readonly revocationListeners = new Set<(sessionId: string) => void>();

  constructor(private readonly pool: PostgresPool) {}

  onRevoke(listener: (sessionId: string) => void): () => void {
    this.revocationListeners.add(listener);
    return () => this.revocationListeners.delete(listener);
  }

  async open(input: NewSession, now = Date.now()): Promise<SessionRecord> {
    const { rows } = await this.pool.query<SessionRow>(
      `INSERT INTO oauth_sessions (subject, person_name, client_id, client_name, tools, logins, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, $8) RETURNING *`,
      [
        input.subject,
        input.personName,
        input.clientId,
        input.clientName,
        JSON.stringify(input.tools),
        JSON.stringify(input.logins),
        now,
        input.expiresAt,
      ],
    );
    return toRecord(rows[0]!);
  }

  async find(id: string): Promise<SessionRecord | undefined> {
    const number = sessionNumber(id);
    if (number === undefined) return undefined;
    const { rows } = await this.pool.query<SessionRow>('SELECT * FROM oauth_sessions WHERE number = $1', [number]);
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  /** One primary-key lookup of two integers. */
  async state(id: string, now = Date.now()): Promise<SessionState | undefined> {
    const number = sessionNumber(id);
    if (number === undefined) return undefined;
    const { rows } = await this.pool.query<{ expires_at: number; revoked_at: number | null }>(
      'SELECT expires_at, revoked_at FROM oauth_sessions WHERE number = $1',
      [number],
    );
    return rows[0] ? sessionState({ expiresAt: rows[0].expires_at, revokedAt: rows[0].revoked_at }, now) : undefined;
  }

  async latestOpen(subject: string, clientId: string, now = Date.now()): Promise<SessionRecord | undefined> {
    const { rows } = await this.pool.query<SessionRow>(
      `SELECT * FROM oauth_sessions WHERE subject = $1 AND client_id = $2 AND revoked_at IS NULL AND expires_at > $3
       ORDER BY number DESC LIMIT 1`,
      [subject, clientId, now],
    );
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async list(): Promise<SessionRecord[]> {
    const { rows } = await this.pool.query<SessionRow>('SELECT * FROM oauth_sessions ORDER BY number');
    return rows.map(toRecord);
  }

  /** The updated row, or (already revoked) the row as it stands: one statement, whoever revoked first wins. */
  async revoke(id: string, reason: string, now = Date.now()): Promise<SessionRecord> {
    const number = sessionNumber(id);
    const { rows } =
      number === undefined
        ? { rows: [] as SessionRow[] }
        : await this.pool.query<SessionRow>(
            `WITH revoked AS (
               UPDATE oauth_sessions SET revoked_at = $2, revoked_reason = $3 WHERE number = $1 AND revoked_at IS NULL RETURNING *
             )
             SELECT * FROM revoked
             UNION ALL
             SELECT * FROM oauth_sessions WHERE number = $1 AND NOT EXISTS (SELECT 1 FROM revoked)`,
            [number, now, reason],
          );
    if (!rows[0]) throw new GatewayError('SESSION_NOT_FOUND', `no session named '${id}'; \`gateway sessions list\` shows them`);
    for (const listener of this.revocationListeners) listener(id);
    return toRecord(rows[0]);
  }

  /**
   * Written only when the set grows, so a client retrying a stale tool costs no write per call. The merged set is
   * sorted by code point (COLLATE "C"), as the SQLite adapter sorts it.
   */
  async requestReapproval(id: string, tools: readonly string[], now = Date.now()): Promise<void> {
    const number = sessionNumber(id);
    if (number === undefined) return;
    await this.pool.query(
      `UPDATE oauth_sessions SET
         reapproval_requested_at = COALESCE(reapproval_requested_at, $2),
         reapproval_tools = (
           SELECT COALESCE(jsonb_agg(tool ORDER BY tool COLLATE "C"), '[]'::jsonb)
           FROM (
             SELECT jsonb_array_elements_text(COALESCE(reapproval_tools, '[]'::jsonb))
             UNION SELECT jsonb_array_elements_text($3::jsonb)
           ) AS merged (tool)
         )
       WHERE number = $1 AND (reapproval_requested_at IS NULL OR NOT COALESCE(reapproval_tools, '[]'::jsonb) @> $3::jsonb)`,
      [number, now, JSON.stringify(tools)],
    );
  }
}
