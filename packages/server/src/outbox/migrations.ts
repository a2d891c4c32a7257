import type { Migration } from '../store/database.js';

/**
 * Outbox tables. `webhook_endpoints` holds, per endpoint, the first sequence number (events take the highest
 * stored sequence + 1 in the receipt's transaction; this column is only the floor), whether a `410 Gone`
 * disabled it, and the delivery lease (one dispatcher at a time per endpoint, so ordering holds with several
 * processes on one database). `webhook_outbox` holds each event's
 * exact body, so a retry or a replay sends the same bytes under the same id. Never secrets: bodies carry
 * receipts, which hold digests only.
 */
export const outboxMigrations: Migration[] = [
  {
    id: 'outbox-001',
    sql: `
      CREATE TABLE webhook_endpoints (
        name TEXT PRIMARY KEY,
        next_sequence INTEGER NOT NULL DEFAULT 1,
        disabled_at TEXT,
        disabled_reason TEXT,
        lease_holder TEXT,
        lease_expires_at INTEGER
      );
      CREATE TABLE webhook_outbox (
        endpoint TEXT NOT NULL REFERENCES webhook_endpoints (name),
        sequence INTEGER NOT NULL,
        event_id TEXT NOT NULL, -- evt_<receipt>_<endpoint>: unique by construction, so no index to maintain
        receipt_id TEXT,
        body TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL DEFAULT 0,
        last_attempt_at TEXT,
        last_status INTEGER,
        last_error TEXT,
        created_at TEXT NOT NULL,
        delivered_at TEXT,
        PRIMARY KEY (endpoint, sequence)
      );
      CREATE INDEX webhook_outbox_pending ON webhook_outbox (endpoint, sequence) WHERE status = 'pending';
    `,
  },
];
