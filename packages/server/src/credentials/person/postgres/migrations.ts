import type { Migration } from '../../../store/schema/migration.js';

/** The table of the linked accounts' PostgreSQL adapter, under the SQLite adapter's id: metadata only, never a token. */
export const postgresLinkedAccountMigrations: Migration[] = [
  {
    id: 'linked-accounts-001',
    sql: `
      CREATE TABLE linked_accounts (
        person TEXT NOT NULL,
        login TEXT NOT NULL,
        subject TEXT,
        scopes JSONB NOT NULL,
        linked_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (person, login)
      );
    `,
  },
];
