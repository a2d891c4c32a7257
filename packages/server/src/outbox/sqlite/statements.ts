import type Database from 'better-sqlite3';
import type { SqliteDatabase } from '../../store/sqlite/database.js';
import type { OutboxEvent, OutboxStatus } from '../ports.js';

/** A row of `webhook_outbox` as SQLite returns it. */
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

type StatementName =
  | 'ensure'
  | 'nextSequence'
  | 'insert'
  | 'lease'
  | 'release'
  | 'pending'
  | 'acknowledge'
  | 'raisePendingFrom'
  | 'lowerPendingFrom'
  | 'attemptFailed'
  | 'attemptExhausted'
  | 'pause'
  | 'pausedState'
  | 'freshCycle'
  | 'disable'
  | 'enable'
  | 'firstFailed'
  | 'forgetAcksFrom'
  | 'replayFailed'
  | 'replayFrom'
  | 'endpoint'
  | 'counts'
  | 'events';

export type OutboxStatements = Record<StatementName, Database.Statement>;

/** The outbox's statements, prepared once per connection (tables: ./migrations.ts). */
export function outboxStatements(database: SqliteDatabase): OutboxStatements {
  return {
    ensure: database.prepare('INSERT OR IGNORE INTO webhook_endpoints (name) VALUES (?)'),
    // The highest stored sequence + 1 (a seek on the primary key), never below the endpoint's floor; no row
    // when the endpoint has none. A read instead of an UPDATE: one page fewer in every receipt's commit.
    nextSequence: database
      .prepare(
        'SELECT max(coalesce((SELECT sequence FROM webhook_outbox WHERE endpoint = @name ORDER BY sequence DESC LIMIT 1) + 1, 0), ' +
          'next_sequence) FROM webhook_endpoints WHERE name = @name',
      )
      .pluck(),
    insert: database.prepare(`
      INSERT INTO webhook_outbox (endpoint, sequence, event_id, receipt_id, body, status, created_at)
      VALUES (?, ?, ?, ?, ?, 'pending', ?)`),
    lease: database.prepare(`
      UPDATE webhook_endpoints SET lease_holder = @holder, lease_expires_at = @expires
      WHERE name = @name AND disabled_at IS NULL AND paused_at IS NULL
        AND (lease_holder IS NULL OR lease_holder = @holder OR lease_expires_at <= @now)`),
    release: database.prepare(
      'UPDATE webhook_endpoints SET lease_holder = NULL, lease_expires_at = NULL WHERE name = ? AND lease_holder = ?',
    ),
    // Pending: from the endpoint's `pending_from` on (a range of the primary key), not failed, not acknowledged.
    pending: database.prepare(`
      SELECT o.* FROM webhook_outbox o
      WHERE o.endpoint = @endpoint AND o.status = 'pending'
        AND o.sequence >= (SELECT pending_from FROM webhook_endpoints WHERE name = @endpoint)
        AND NOT EXISTS (SELECT 1 FROM webhook_acks a WHERE a.endpoint = o.endpoint AND a.sequence = o.sequence)
      ORDER BY o.sequence LIMIT @limit`),
    // One acknowledgement, one small row (the event's own row is not even read): only while `holder` holds the
    // lease (a dispatcher only acknowledges what it sent while holding it), once per event (the key), in one
    // statement (no explicit transaction).
    acknowledge: database.prepare(`
      INSERT OR IGNORE INTO webhook_acks (endpoint, sequence, status, at)
      SELECT @endpoint, @sequence, @status, @at
      WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = @endpoint AND lease_holder = @holder)`),
    // Moves the start of the pending search up to @next when nothing below it is pending any more.
    raisePendingFrom: database.prepare(`
      UPDATE webhook_endpoints SET pending_from = @next
      WHERE name = @endpoint AND pending_from < @next
        AND NOT EXISTS (
          SELECT 1 FROM webhook_outbox o
          WHERE o.endpoint = @endpoint AND o.status = 'pending'
            AND o.sequence >= webhook_endpoints.pending_from AND o.sequence < @next
            AND NOT EXISTS (SELECT 1 FROM webhook_acks a WHERE a.endpoint = o.endpoint AND a.sequence = o.sequence))`),
    lowerPendingFrom: database.prepare(
      'UPDATE webhook_endpoints SET pending_from = min(pending_from, @from) WHERE name = @endpoint AND @from IS NOT NULL',
    ),
    attemptFailed: database.prepare(`
      UPDATE webhook_outbox SET attempts = attempts + 1, last_status = @status, last_error = @error,
        last_attempt_at = @at, next_attempt_at = COALESCE(@next, next_attempt_at),
        status = CASE WHEN @next IS NULL THEN 'failed' ELSE 'pending' END
      WHERE endpoint = @endpoint AND sequence = @sequence AND status = 'pending'
        AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = @endpoint AND lease_holder = @holder)`),
    // The exhausting attempt: counted and recorded like any failure, but the event stays pending.
    attemptExhausted: database.prepare(`
      UPDATE webhook_outbox SET attempts = attempts + 1, last_status = @status, last_error = @error, last_attempt_at = @at
      WHERE endpoint = @endpoint AND sequence = @sequence AND status = 'pending'
        AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = @endpoint AND lease_holder = @holder)`),
    pause: database.prepare(`
      UPDATE webhook_endpoints SET paused_at = @at, paused_reason = @reason, paused_sequence = @sequence,
        lease_holder = NULL, lease_expires_at = NULL
      WHERE name = @endpoint AND lease_holder = @holder`),
    pausedState: database.prepare('SELECT paused_at, paused_sequence, disabled_at FROM webhook_endpoints WHERE name = ?'),
    // A fresh attempt cycle for the event delivery stopped at (its earlier attempts stay in last_* only).
    freshCycle: database.prepare(`
      UPDATE webhook_outbox SET attempts = 0, next_attempt_at = 0
      WHERE endpoint = ? AND sequence = ? AND status = 'pending'`),
    disable: database.prepare('UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE name = ?'),
    enable: database.prepare(`
      UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, paused_at = NULL, paused_reason = NULL,
        paused_sequence = NULL
      WHERE name = ?`),
    firstFailed: database.prepare("SELECT min(sequence) FROM webhook_outbox WHERE endpoint = ? AND status = 'failed'").pluck(),
    forgetAcksFrom: database.prepare('DELETE FROM webhook_acks WHERE endpoint = ? AND sequence >= ?'),
    replayFailed: database.prepare(`
      UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_attempt_at = 0, delivered_at = NULL
      WHERE endpoint = ? AND status = 'failed'`),
    replayFrom: database.prepare(`
      UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_attempt_at = 0, delivered_at = NULL
      WHERE endpoint = ? AND sequence >= ?`),
    endpoint: database.prepare('SELECT * FROM webhook_endpoints WHERE name = ?'),
    // An event with an acknowledgement is delivered, whatever its row says (rows are not rewritten on delivery).
    counts: database.prepare(`
      SELECT CASE WHEN a.sequence IS NOT NULL THEN 'delivered' ELSE o.status END AS status, COUNT(*) AS count
      FROM webhook_outbox o LEFT JOIN webhook_acks a ON a.endpoint = o.endpoint AND a.sequence = o.sequence
      WHERE o.endpoint = ? GROUP BY 1`),
    // The rows as they read with their acknowledgements folded in (the counts' rule): an acknowledged event is
    // delivered at its acknowledgement's time and status, one attempt more than its failures.
    events: database.prepare(`
      SELECT o.endpoint, o.sequence, o.event_id, o.receipt_id, o.body,
        CASE WHEN a.sequence IS NOT NULL THEN 'delivered' ELSE o.status END AS status,
        o.attempts + (a.sequence IS NOT NULL) AS attempts, o.next_attempt_at,
        coalesce(a.at, o.last_attempt_at) AS last_attempt_at, coalesce(a.status, o.last_status) AS last_status,
        CASE WHEN a.sequence IS NOT NULL THEN NULL ELSE o.last_error END AS last_error,
        o.created_at, coalesce(a.at, o.delivered_at) AS delivered_at
      FROM webhook_outbox o LEFT JOIN webhook_acks a ON a.endpoint = o.endpoint AND a.sequence = o.sequence
      WHERE o.endpoint = @endpoint AND o.sequence >= @from
        AND (@status IS NULL OR (CASE WHEN a.sequence IS NOT NULL THEN 'delivered' ELSE o.status END) = @status)
      ORDER BY o.sequence LIMIT @limit`),
  };
}
