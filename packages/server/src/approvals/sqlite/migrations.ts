import type { Migration } from '../../store/sqlite/database.js';

/** The table of the approvals port's SQLite adapter (./approvals.ts). No secret: arguments are shown redacted. */
export const approvalMigrations: Migration[] = [
  {
    id: 'approvals-001',
    sql: `
      CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
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
        approvers TEXT,
        status TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        decided_at INTEGER,
        decided_by TEXT,
        used_at INTEGER
      );
      CREATE INDEX approvals_binding ON approvals (session_id, tool, fingerprint, arguments_digest, created_at);
      CREATE INDEX approvals_created ON approvals (created_at);
    `,
  },
];
