import type { Migration } from '../../store/schema/migration.js';

/**
 * The outbox's tables on PostgreSQL, under the SQLite adapter's ids and in its shape (../sqlite/migrations.ts):
 * `webhook_endpoints` per endpoint (sequence counter, 410 Gone disable, delivery lease, pause), `webhook_outbox`
 * each event's exact body, `webhook_acks` each acknowledgement. One difference: `next_sequence` is the counter
 * itself here (SQLite reads the highest stored sequence instead): an append increments it in the receipt's
 * transaction, and that row lock is what orders the endpoint's events across replicas. Never secrets.
 */
export const postgresOutboxMigrations: Migration[] = [
  {
    id: 'outbox-001',
    sql: `
      CREATE TABLE webhook_endpoints (
        name TEXT PRIMARY KEY,
        next_sequence BIGINT NOT NULL DEFAULT 1,
        disabled_at TEXT,
        disabled_reason TEXT,
        lease_holder TEXT,
        lease_expires_at BIGINT
      );
      CREATE TABLE webhook_outbox (
        endpoint TEXT NOT NULL REFERENCES webhook_endpoints (name),
        sequence BIGINT NOT NULL,
        event_id TEXT NOT NULL,
        receipt_id TEXT,
        body TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at BIGINT NOT NULL DEFAULT 0,
        last_attempt_at TEXT,
        last_status INTEGER,
        last_error TEXT,
        created_at TEXT NOT NULL,
        delivered_at TEXT,
        PRIMARY KEY (endpoint, sequence)
      );
    `,
  },
  {
    // Acknowledgements in a narrow table of their own; `pending_from`: nothing below it is pending.
    id: 'outbox-002',
    sql: `
      CREATE TABLE webhook_acks (
        endpoint TEXT NOT NULL,
        sequence BIGINT NOT NULL,
        status INTEGER NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (endpoint, sequence)
      );
      ALTER TABLE webhook_endpoints ADD COLUMN pending_from BIGINT NOT NULL DEFAULT 0;
    `,
  },
  {
    // A paused endpoint (onExhausted: pause) stops at that event until `gateway webhooks resume`.
    id: 'outbox-003',
    sql: `
      ALTER TABLE webhook_endpoints ADD COLUMN paused_at TEXT;
      ALTER TABLE webhook_endpoints ADD COLUMN paused_reason TEXT;
      ALTER TABLE webhook_endpoints ADD COLUMN paused_sequence BIGINT;
    `,
  },
];
