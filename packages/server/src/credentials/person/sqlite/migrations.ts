import type { Migration } from '../../../store/sqlite/database.js';

/** The table of the linked accounts adapter (linked-accounts.ts): metadata only, never a token. */
export const linkedAccountMigrations: Migration[] = [
  {
    id: 'linked-accounts-001',
    sql: `
      CREATE TABLE linked_accounts (
        person TEXT NOT NULL,
        login TEXT NOT NULL,
        subject TEXT,
        scopes TEXT NOT NULL,
        linked_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (person, login)
      );
    `,
  },
];
