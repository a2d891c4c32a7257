import { randomBytes } from 'node:crypto';
import { ADVISORY_LOCK_CLASS } from '../../store/postgres/advisory-locks.js';
import { inTransaction, type PostgresPool, type Queryable } from '../../store/postgres/database.js';
import {
  approvalStatusAt,
  type ApprovalBinding,
  type ApprovalFilter,
  type ApprovalRecord,
  type ApprovalStatus,
  type Approvals,
  type NewApproval,
} from '../ports.js';

interface ApprovalRow {
  id: string;
  session_id: string;
  tool: string;
  fingerprint: string;
  arguments_digest: string;
  subject: string;
  person_name: string;
  client_id: string;
  client_name: string;
  source: string;
  target: string;
  arguments_preview: string;
  approvers: string[] | null;
  status: ApprovalStatus;
  created_at: number;
  expires_at: number;
  decided_at: number | null;
  decided_by: string | null;
  used_at: number | null;
}

/** A row as the port gives it: a waiting (or approved, unused) approval past its expiry reads as `expired`. */
function recordOf(row: ApprovalRow, now: number): ApprovalRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    tool: row.tool,
    fingerprint: row.fingerprint,
    argumentsDigest: row.arguments_digest,
    subject: row.subject,
    personName: row.person_name,
    clientId: row.client_id,
    clientName: row.client_name,
    source: row.source,
    target: row.target,
    argumentsPreview: row.arguments_preview,
    approvers: row.approvers,
    status: approvalStatusAt(row.status, row.expires_at, now),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    decidedAt: row.decided_at,
    decidedBy: row.decided_by,
    usedAt: row.used_at,
  };
}

const LATEST_FOR = `SELECT * FROM approvals
  WHERE session_id = $1 AND tool = $2 AND fingerprint = $3 AND arguments_digest = $4 AND status != 'used'
  ORDER BY created_at DESC, seq DESC LIMIT 1`;

async function latestFor(database: Queryable, binding: ApprovalBinding): Promise<ApprovalRow | undefined> {
  const { rows } = await database.query<ApprovalRow>(LATEST_FOR, [
    binding.sessionId,
    binding.tool,
    binding.fingerprint,
    binding.argumentsDigest,
  ]);
  return rows[0];
}

/**
 * The approvals port (../ports.ts) over table `approvals`. Deciding and using are single conditional UPDATEs;
 * asking is find-or-create in one transaction under an advisory lock on the call's binding (no row exists yet to
 * lock), so two retries of one call racing on any replicas create one approval.
 */
export class PostgresApprovals implements Approvals {
  constructor(private readonly pool: PostgresPool) {}

  async findFor(binding: ApprovalBinding, now = Date.now()): Promise<ApprovalRecord | undefined> {
    const row = await latestFor(this.pool, binding);
    return row ? recordOf(row, now) : undefined;
  }

  async request(input: NewApproval, now = Date.now()): Promise<ApprovalRecord> {
    return inTransaction(this.pool, async (client) => {
      const binding = [input.sessionId, input.tool, input.fingerprint, input.argumentsDigest].join('\n');
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ADVISORY_LOCK_CLASS.approvalRequests, binding]);
      const open = await latestFor(client, input);
      if (open && recordOf(open, now).status !== 'expired') return recordOf(open, now);
      const { rows } = await client.query<ApprovalRow>(
        `INSERT INTO approvals (id, session_id, tool, fingerprint, arguments_digest, subject, person_name, client_id, client_name,
           source, target, arguments_preview, approvers, status, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, 'waiting', $14, $15) RETURNING *`,
        [
          `approval-${randomBytes(16).toString('base64url')}`,
          input.sessionId,
          input.tool,
          input.fingerprint,
          input.argumentsDigest,
          input.subject,
          input.personName,
          input.clientId,
          input.clientName,
          input.source,
          input.target,
          input.argumentsPreview,
          input.approvers === null ? null : JSON.stringify(input.approvers),
          now,
          input.expiresAt,
        ],
      );
      return recordOf(rows[0]!, now);
    });
  }

  async find(id: string, now = Date.now()): Promise<ApprovalRecord | undefined> {
    const { rows } = await this.pool.query<ApprovalRow>('SELECT * FROM approvals WHERE id = $1', [id]);
    return rows[0] ? recordOf(rows[0], now) : undefined;
  }

  /** The decided row, or (nothing decided) whether the approval exists at all: one statement. */
  async decide(
    id: string,
    decision: 'approved' | 'denied',
    by: string,
    now = Date.now(),
  ): Promise<ApprovalRecord | 'not-waiting' | undefined> {
    const { rows } = await this.pool.query<ApprovalRow & { decided: boolean }>(
      `WITH decided AS (
         UPDATE approvals SET status = $2, decided_at = $3, decided_by = $4 WHERE id = $1 AND status = 'waiting' AND expires_at > $3
         RETURNING *
       )
       SELECT *, true AS decided FROM decided
       UNION ALL
       SELECT *, false AS decided FROM approvals WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM decided)`,
      [id, decision, now, by],
    );
    const row = rows[0];
    if (!row) return undefined;
    return row.decided ? recordOf(row, now) : 'not-waiting';
  }

  async use(id: string, now = Date.now()): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE approvals SET status = 'used', used_at = $2 WHERE id = $1 AND status = 'approved' AND expires_at > $2`,
      [id, now],
    );
    return rowCount === 1;
  }

  async expire(now = Date.now()): Promise<ApprovalRecord[]> {
    const { rows } = await this.pool.query<ApprovalRow>(
      `UPDATE approvals SET status = 'expired' WHERE status IN ('waiting', 'approved') AND expires_at <= $1 RETURNING *`,
      [now],
    );
    return rows.map((row) => recordOf(row, now));
  }

  async list(filter: ApprovalFilter, now = Date.now()): Promise<ApprovalRecord[]> {
    // The state filter reads the state as recordOf does (an unanswered or unused one past its expiry: expired).
    const { rows } = await this.pool.query<ApprovalRow>(
      `SELECT * FROM approvals WHERE ($1::text IS NULL OR session_id = $1)
         AND ($2::text[] IS NULL
           OR (CASE WHEN status IN ('waiting', 'approved') AND expires_at <= $3 THEN 'expired' ELSE status END) = ANY($2))
       ORDER BY created_at DESC, seq DESC LIMIT $4 OFFSET $5`,
      [filter.sessionId ?? null, filter.statuses ? [...filter.statuses] : null, now, filter.limit, filter.offset ?? 0],
    );
    return rows.map((row) => recordOf(row, now));
  }
}
