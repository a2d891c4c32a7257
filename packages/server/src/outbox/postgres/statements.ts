import type { OutboxEvent, OutboxStatus } from '../ports.js';

/** A row of `webhook_outbox` as PostgreSQL returns it (BIGINT columns read as numbers, store/postgres/database.ts). */
export interface EventRow {
  endpoint: string;
  sequence: number;
  event_id: string;
  receipt_id: string | null;
  body: string;
  status: OutboxStatus;
  attempts: number;
  next_attempt_at: number;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

export function toEvent(row: EventRow): OutboxEvent {
  return {
    endpoint: row.endpoint,
    sequence: row.sequence,
    eventId: row.event_id,
    receiptId: row.receipt_id,
    body: row.body,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastAttemptAt: row.last_attempt_at,
    lastStatus: row.last_status,
    lastError: row.last_error,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
  };
}

/** The outbox's statements (tables: ./migrations.ts), the SQLite adapter's (../sqlite/statements.ts) in PostgreSQL's dialect. */
export const SQL = {
  ensure: 'INSERT INTO webhook_endpoints (name) SELECT unnest($1::text[]) ON CONFLICT (name) DO NOTHING',
  // The endpoint's row is locked until the receipt's unit of work ends: appends to one endpoint are serialised
  // across replicas, in commit order, and a rollback takes the increment back (no gap).
  takeSequence: 'UPDATE webhook_endpoints SET next_sequence = next_sequence + 1 WHERE name = $1 RETURNING next_sequence - 1 AS sequence',
  insert: `
    INSERT INTO webhook_outbox (endpoint, sequence, event_id, receipt_id, body, status, created_at)
    VALUES ($1, $2, $3, $4, $5, 'pending', $6)`,
  lease: `
    UPDATE webhook_endpoints SET lease_holder = $2, lease_expires_at = $4
    WHERE name = $1 AND disabled_at IS NULL AND paused_at IS NULL
      AND (lease_holder IS NULL OR lease_holder = $2 OR lease_expires_at <= $3)`,
  release: 'UPDATE webhook_endpoints SET lease_holder = NULL, lease_expires_at = NULL WHERE name = $1 AND lease_holder = $2',
  pending: `
    SELECT o.* FROM webhook_outbox o
    WHERE o.endpoint = $1 AND o.status = 'pending'
      AND o.sequence >= (SELECT pending_from FROM webhook_endpoints WHERE name = $1)
      AND NOT EXISTS (SELECT 1 FROM webhook_acks a WHERE a.endpoint = o.endpoint AND a.sequence = o.sequence)
    ORDER BY o.sequence LIMIT $2`,
  // Only while `holder` holds the lease, once per event (the key), in one statement.
  acknowledge: `
    INSERT INTO webhook_acks (endpoint, sequence, status, at)
    SELECT $1, $2, $3, $4
    WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = $1 AND lease_holder = $5)
    ON CONFLICT (endpoint, sequence) DO NOTHING`,
  raisePendingFrom: `
    UPDATE webhook_endpoints SET pending_from = $2
    WHERE name = $1 AND pending_from < $2
      AND NOT EXISTS (
        SELECT 1 FROM webhook_outbox o
        WHERE o.endpoint = $1 AND o.status = 'pending'
          AND o.sequence >= webhook_endpoints.pending_from AND o.sequence < $2
          AND NOT EXISTS (SELECT 1 FROM webhook_acks a WHERE a.endpoint = o.endpoint AND a.sequence = o.sequence))`,
  lowerPendingFrom:
    'UPDATE webhook_endpoints SET pending_from = least(pending_from, $2::bigint) WHERE name = $1 AND $2::bigint IS NOT NULL',
  attemptFailed: `
    UPDATE webhook_outbox SET attempts = attempts + 1, last_status = $4::integer, last_error = $5, last_attempt_at = $7,
      next_attempt_at = coalesce($6::bigint, next_attempt_at),
      status = CASE WHEN $6::bigint IS NULL THEN 'failed' ELSE 'pending' END
    WHERE endpoint = $1 AND sequence = $2 AND status = 'pending'
      AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = $1 AND lease_holder = $3)`,
  // The exhausting attempt: counted and recorded like any failure, but the event stays pending.
  attemptExhausted: `
    UPDATE webhook_outbox SET attempts = attempts + 1, last_status = $4::integer, last_error = $5, last_attempt_at = $6
    WHERE endpoint = $1 AND sequence = $2 AND status = 'pending'
      AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = $1 AND lease_holder = $3)`,
  pause: `
    UPDATE webhook_endpoints SET paused_at = $4, paused_reason = $5, paused_sequence = $2, lease_holder = NULL, lease_expires_at = NULL
    WHERE name = $1 AND lease_holder = $3`,
  pausedState: 'SELECT paused_at, paused_sequence, disabled_at FROM webhook_endpoints WHERE name = $1 FOR UPDATE',
  freshCycle: `UPDATE webhook_outbox SET attempts = 0, next_attempt_at = 0 WHERE endpoint = $1 AND sequence = $2 AND status = 'pending'`,
  disable: 'UPDATE webhook_endpoints SET disabled_at = $2, disabled_reason = $3 WHERE name = $1',
  enable: `
    UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, paused_at = NULL, paused_reason = NULL,
      paused_sequence = NULL
    WHERE name = $1`,
  firstFailed: "SELECT min(sequence) AS sequence FROM webhook_outbox WHERE endpoint = $1 AND status = 'failed'",
  forgetAcksFrom: 'DELETE FROM webhook_acks WHERE endpoint = $1 AND sequence >= $2',
  replayFailed: `
    UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_attempt_at = 0, delivered_at = NULL
    WHERE endpoint = $1 AND status = 'failed'`,
  replayFrom: `
    UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_attempt_at = 0, delivered_at = NULL
    WHERE endpoint = $1 AND sequence >= $2`,
  endpoint: 'SELECT * FROM webhook_endpoints WHERE name = $1',
  // An event with an acknowledgement is delivered, whatever its row says (rows are not rewritten on delivery).
  counts: `
    SELECT CASE WHEN a.sequence IS NOT NULL THEN 'delivered' ELSE o.status END AS status, COUNT(*) AS count
    FROM webhook_outbox o LEFT JOIN webhook_acks a ON a.endpoint = o.endpoint AND a.sequence = o.sequence
    WHERE o.endpoint = $1 GROUP BY 1`,
  // The rows with their acknowledgements folded in (the counts' rule).
  events: `
    SELECT o.endpoint, o.sequence, o.event_id, o.receipt_id, o.body,
      CASE WHEN a.sequence IS NOT NULL THEN 'delivered' ELSE o.status END AS status,
      o.attempts + (CASE WHEN a.sequence IS NOT NULL THEN 1 ELSE 0 END) AS attempts, o.next_attempt_at,
      coalesce(a.at, o.last_attempt_at) AS last_attempt_at, coalesce(a.status, o.last_status) AS last_status,
      CASE WHEN a.sequence IS NOT NULL THEN NULL ELSE o.last_error END AS last_error,
      o.created_at, coalesce(a.at, o.delivered_at) AS delivered_at
    FROM webhook_outbox o LEFT JOIN webhook_acks a ON a.endpoint = o.endpoint AND a.sequence = o.sequence
    WHERE o.endpoint = $1 AND o.sequence >= $2
      AND ($3::text IS NULL OR (CASE WHEN a.sequence IS NOT NULL THEN 'delivered' ELSE o.status END) = $3::text)
    ORDER BY o.sequence LIMIT $4`,
} as const;
