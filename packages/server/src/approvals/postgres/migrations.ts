import type { Migration } from '../../store/schema/migration.js';

/**
 * The table of the approvals port's PostgreSQL adapter (./approvals.ts), under the SQLite adapter's id.
 * `seq` orders approvals created in the same millisecond, as SQLite's rowid does. No secret: arguments are shown
 * redacted.
 */
export const postgresApprovalMigrations: Migration[] = [
  {
    id: 'approvals-001',
    sql: `
      CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        session_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        arguments_digest TEXT NOT NULL,
        subject TEXT NOT NULL,
        person_name TEXT NOT NULL,
        client_id TEXT NOT NULL,
        client_name TEXT NOT NULL,
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        arguments_preview TEXT NOT NULL,
        approvers JSONB,
        status TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        decided_at BIGINT,
        decided_by TEXT,
        used_at BIGINT
      );
      CREATE INDEX approvals_binding ON approvals (session_id, tool, fingerprint, arguments_digest, created_at);
      CREATE INDEX approvals_created ON approvals (created_at, seq);
    `,
  },
];
