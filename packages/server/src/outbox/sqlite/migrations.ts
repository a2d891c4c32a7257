import type { Migration } from '../../store/sqlite/database.js';

/**
 * Outbox tables. `webhook_endpoints` holds, per endpoint, the first sequence number (events take the highest
 * stored sequence + 1 in the receipt's transaction; this column is only the floor), whether a `410 Gone`
 * disabled it, and the delivery lease (one dispatcher at a time per endpoint, so ordering holds with several
 * processes on one database). `webhook_outbox` holds each event's
 * exact body, so a retry or a replay sends the same bytes under the same id; `webhook_acks` each
 * acknowledgement (status and time): an event with an acknowledgement is delivered. Never secrets: bodies carry
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
  {
    // Acknowledgements get a narrow table of their own instead of rewriting the event's row (about 2 KB with its
    // body) and its entry in the pending index: each acknowledgement then commits one small page, and each
    // event's append one index page fewer (see store.ts). `pending_from` is where the search for pending events
    // starts: nothing below it is pending; replays lower it, acknowledgements raise it now and then. Rows already
    // marked `delivered` keep their status.
    id: 'outbox-002',
    sql: `
      CREATE TABLE webhook_acks (
        endpoint TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        status INTEGER NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (endpoint, sequence)
      ) WITHOUT ROWID;
      ALTER TABLE webhook_endpoints ADD COLUMN pending_from INTEGER NOT NULL DEFAULT 0;
      UPDATE webhook_endpoints SET pending_from = coalesce(
        (SELECT min(sequence) FROM webhook_outbox WHERE endpoint = webhook_endpoints.name AND status = 'pending'),
        (SELECT max(sequence) + 1 FROM webhook_outbox WHERE endpoint = webhook_endpoints.name),
        0);
      DROP INDEX webhook_outbox_pending;
    `,
  },
  {
    // An endpoint whose event ran out of attempts (onExhausted: pause) stops at that event: later events wait,
    // nothing is given up, and no process takes its lease until `gateway webhooks resume` clears these.
    id: 'outbox-003',
    sql: `
      ALTER TABLE webhook_endpoints ADD COLUMN paused_at TEXT;
      ALTER TABLE webhook_endpoints ADD COLUMN paused_reason TEXT;
      ALTER TABLE webhook_endpoints ADD COLUMN paused_sequence INTEGER;
    `,
  },
];
