import type { PostgresPool } from '../../store/postgres/database.js';
import type { DriftStore } from '../ports.js';
import { PostgresDriftStore } from './store.js';

export { postgresDriftMigrations } from './migrations.js';
export { PostgresDriftStore };

/** The drift store over a PostgreSQL pool migrated with `postgresDriftMigrations`. */
export function postgresDriftStore(pool: PostgresPool): DriftStore {
  return new PostgresDriftStore(pool);
}
