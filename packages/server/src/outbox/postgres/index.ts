import type { PostgresPool } from '../../store/postgres/database.js';
import type { OutboxStore } from '../ports.js';
import { PostgresOutboxStore } from './store.js';

export { postgresOutboxMigrations } from './migrations.js';
export { PostgresOutboxStore };

/** The outbox's PostgreSQL adapter over a pool migrated with `postgresOutboxMigrations` (the receipt log's database). */
export function postgresOutboxStore(pool: PostgresPool): OutboxStore {
  return new PostgresOutboxStore(pool);
}
