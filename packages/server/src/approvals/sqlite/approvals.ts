import { randomBytes } from 'node:crypto';
import { writeTransaction, type SqliteDatabase } from '../../store/sqlite/database.js';
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
  approvers: string | null;
  status: ApprovalStatus;
  created_at: number;
  expires_at: number;
  decided_at: number | null;
  decided_by: string | null;
  used_at: number | null;
}

/** A row as the port gives it: a waiting approval past its expiry reads as `expired`. */
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
    approvers: row.approvers === null ? null : (JSON.parse(row.approvers) as string[]),
    status: approvalStatusAt(row.status, row.expires_at, now),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    decidedAt: row.decided_at,
    decidedBy: row.decided_by,
    usedAt: row.used_at,
  };
}

/** The approvals port (../ports.ts) over table `approvals`; deciding and using are single conditional UPDATEs. */
export class SqliteApprovals implements Approvals {
  private readonly statements;
  private readonly requestOnce;

  constructor(database: SqliteDatabase) {
    this.statements = {
      latestFor: database.prepare(
        `SELECT * FROM approvals WHERE session_id = ? AND tool = ? AND fingerprint = ? AND arguments_digest = ? AND status != 'used'
         ORDER BY created_at DESC, rowid DESC LIMIT 1`,
      ),
      insert: database.prepare(
        `INSERT INTO approvals (id, session_id, tool, fingerprint, arguments_digest, subject, person_name, client_id, client_name,
           source, target, arguments_preview, approvers, status, created_at, expires_at)
         VALUES (@id, @sessionId, @tool, @fingerprint, @argumentsDigest, @subject, @personName, @clientId, @clientName,
           @source, @target, @argumentsPreview, @approvers, 'waiting', @createdAt, @expiresAt)`,
      ),
      byId: database.prepare('SELECT * FROM approvals WHERE id = ?'),
      decide: database.prepare(
        `UPDATE approvals SET status = ?, decided_at = ?, decided_by = ? WHERE id = ? AND status = 'waiting' AND expires_at > ?`,
      ),
      use: database.prepare(`UPDATE approvals SET status = 'used', used_at = ? WHERE id = ? AND status = 'approved' AND expires_at > ?`),
      expire: database.prepare(
        `UPDATE approvals SET status = 'expired' WHERE status IN ('waiting', 'approved') AND expires_at <= ? RETURNING *`,
      ),
      // The state filter reads the state as recordOf does (an unanswered or unused one past its expiry: expired).
      list: database.prepare(
        `SELECT * FROM approvals WHERE (@session IS NULL OR session_id = @session)
           AND (@statuses IS NULL OR (CASE WHEN status IN ('waiting', 'approved') AND expires_at <= @now THEN 'expired' ELSE status END)
             IN (SELECT value FROM json_each(@statuses)))
         ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`,
      ),
    };
    // Find-or-create in one write transaction: two retries of one call racing create one approval.
    this.requestOnce = writeTransaction(database, (input: NewApproval, now: number): ApprovalRecord => {
      const open = this.openFor(input, now);
      if (open) return open;
      const id = `approval-${randomBytes(16).toString('base64url')}`;
      this.statements.insert.run({
        ...input,
        id,
        approvers: input.approvers === null ? null : JSON.stringify(input.approvers),
        createdAt: now,
      });
      return recordOf(this.statements.byId.get(id) as ApprovalRow, now);
    });
  }

  private openFor(binding: ApprovalBinding, now: number): ApprovalRecord | undefined {
    const row = this.statements.latestFor.get(binding.sessionId, binding.tool, binding.fingerprint, binding.argumentsDigest) as
      | ApprovalRow
      | undefined;
    if (!row) return undefined;
    const record = recordOf(row, now);
    return record.status === 'expired' ? undefined : record;
  }

  async findFor(binding: ApprovalBinding, now = Date.now()): Promise<ApprovalRecord | undefined> {
    const row = this.statements.latestFor.get(binding.sessionId, binding.tool, binding.fingerprint, binding.argumentsDigest) as
      | ApprovalRow
      | undefined;
    return row ? recordOf(row, now) : undefined;
  }

  async request(input: NewApproval, now = Date.now()): Promise<ApprovalRecord> {
    return this.requestOnce(input, now);
  }

  async find(id: string, now = Date.now()): Promise<ApprovalRecord | undefined> {
    const row = this.statements.byId.get(id) as ApprovalRow | undefined;
    return row ? recordOf(row, now) : undefined;
  }

  async decide(
    id: string,
    decision: 'approved' | 'denied',
    by: string,
    now = Date.now(),
  ): Promise<ApprovalRecord | 'not-waiting' | undefined> {
    const changed = this.statements.decide.run(decision, now, by, id, now).changes;
    const row = this.statements.byId.get(id) as ApprovalRow | undefined;
    if (!row) return undefined;
    return changed === 1 ? recordOf(row, now) : 'not-waiting';
  }

  async use(id: string, now = Date.now()): Promise<boolean> {
    return this.statements.use.run(now, id, now).changes === 1;
  }

  async expire(now = Date.now()): Promise<ApprovalRecord[]> {
    return (this.statements.expire.all(now) as ApprovalRow[]).map((row) => recordOf(row, now));
  }

  async list(filter: ApprovalFilter, now = Date.now()): Promise<ApprovalRecord[]> {
    const rows = this.statements.list.all({
      session: filter.sessionId ?? null,
      statuses: filter.statuses ? JSON.stringify(filter.statuses) : null,
      now,
      limit: filter.limit,
      offset: filter.offset ?? 0,
    }) as ApprovalRow[];
    return rows.map((row) => recordOf(row, now));
  }
}
