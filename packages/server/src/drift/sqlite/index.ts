import type { SqliteDatabase } from '../../store/sqlite/database.js';
import type { DriftStore } from '../ports.js';
import { SqliteDriftStore } from './store.js';

export { driftMigrations } from './migrations.js';
export { SqliteDriftStore };

/** The drift store over one database migrated with `driftMigrations` (what the composition root and tests build). */
export function sqliteDriftStore(database: SqliteDatabase): DriftStore {
  return new SqliteDriftStore(database);
}
