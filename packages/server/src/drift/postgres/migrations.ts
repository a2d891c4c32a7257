import type { Migration } from '../../store/schema/migration.js';

/**
 * The drift tables on PostgreSQL, under the SQLite adapter's ids and in its shape (../sqlite/migrations.ts): the
 * state of each source's checks, and proposals (the normalised operations of a live description that differs
 * from the publication in use), JSON kept as text exactly as SQLite keeps it. Never secrets.
 */
export const postgresDriftMigrations: Migration[] = [
  {
    id: 'drift-001',
    sql: `
      CREATE TABLE drift_state (
        source TEXT PRIMARY KEY,
        document TEXT NOT NULL,
        etag TEXT,
        last_modified TEXT,
        document_digest TEXT,
        checked_at TEXT,
        status TEXT NOT NULL,
        error_code TEXT,
        error_message TEXT,
        publication_id TEXT,
        blocked_json TEXT NOT NULL DEFAULT '[]'
      );
      CREATE TABLE drift_proposals (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        source TEXT NOT NULL,
        document_digest TEXT NOT NULL,
        publication_id TEXT,
        detected_at TEXT NOT NULL,
        last_seen_at TEXT NOT NULL,
        operations_json TEXT NOT NULL,
        added_json TEXT NOT NULL,
        changed_json TEXT NOT NULL,
        removed_json TEXT NOT NULL,
        UNIQUE (source, document_digest)
      );
    `,
  },
  {
    // The proposal as `gateway import` will write it: its publication number, its tool count, its change in words.
    id: 'drift-002',
    sql: `
      ALTER TABLE drift_proposals ADD COLUMN proposal_id TEXT;
      ALTER TABLE drift_proposals ADD COLUMN tool_count INTEGER;
      ALTER TABLE drift_proposals ADD COLUMN summary_json TEXT NOT NULL DEFAULT '[]';
    `,
  },
];
