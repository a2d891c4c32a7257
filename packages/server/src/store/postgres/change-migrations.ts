import type { Migration } from '../schema/migration.js';

/**
 * The change feed's table (./changes.ts), in a module of its own: the list of PostgreSQL migrations
 * (../../storage.ts) is read by a gateway on SQLite too, which must not load node-postgres. The table, under the
 * SQLite adapter's id, is what a replica reads to catch up after a reconnect.
 */
export const postgresChangeMigrations: Migration[] = [
  {
    id: 'changes-001',
    sql: `CREATE TABLE changes (
      id BIGSERIAL PRIMARY KEY,
      topic TEXT NOT NULL,
      payload TEXT NOT NULL,
      published_at BIGINT NOT NULL DEFAULT (extract(epoch from clock_timestamp()) * 1000)::BIGINT
    );
    CREATE INDEX changes_published_at ON changes (published_at);`,
  },
];

/** The NOTIFY channel every replica listens on. */
export const CHANGE_CHANNEL = 'gateway_changes';
