import type { SqliteDatabase } from '../../../store/sqlite/database.js';
import type { LinkedAccounts } from '../ports.js';
import { SqliteLinkedAccounts } from './linked-accounts.js';

export { linkedAccountMigrations } from './migrations.js';

/** The SQLite adapter of the linked accounts port, over a database migrated with `linkedAccountMigrations`. */
export function sqliteLinkedAccounts(database: SqliteDatabase): LinkedAccounts {
  return new SqliteLinkedAccounts(database);
}
