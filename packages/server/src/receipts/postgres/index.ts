import type { PostgresPool } from '../../store/postgres/database.js';
import { PostgresUnitOfWork } from '../../store/postgres/unit-of-work.js';
import type { ReceiptStorage } from '../store.js';
import { createPostgresReceiptStore } from './receipt-store.js';

export { postgresReceiptMigrations } from './migrations.js';
export { createPostgresReceiptStore };

/**
 * The receipt store over a database migrated with `postgresReceiptMigrations`, and the unit of work over the same
 * pool (the outbox's PostgreSQL adapter writes in its transactions, so a receipt and its events commit together).
 */
export function postgresReceiptStorage(pool: PostgresPool): ReceiptStorage {
  return { store: createPostgresReceiptStore(pool), unitOfWork: new PostgresUnitOfWork(pool) };
}
