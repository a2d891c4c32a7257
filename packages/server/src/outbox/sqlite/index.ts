import type { SqliteDatabase } from '../../store/sqlite/database.js';
import type { OutboxStore } from '../ports.js';
import { SqliteOutboxStore } from './store.js';

export { outboxMigrations } from './migrations.js';
export { SQLITE_ADAPTER, SqliteOutboxStore } from './store.js';

/** The outbox's SQLite adapter over a database migrated with `outboxMigrations` (the receipt log's database). */
export function sqliteOutboxStore(database: SqliteDatabase): OutboxStore {
  return new SqliteOutboxStore(database);
}
