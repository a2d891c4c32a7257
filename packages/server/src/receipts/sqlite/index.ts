import type { SqliteDatabase } from '../../store/sqlite/database.js';
import { createSqliteUnitOfWork } from '../../store/sqlite/unit-of-work.js';
import type { ReceiptStorage } from '../store.js';
import { createSqliteReceiptStore } from './receipt-store.js';

export { receiptMigrations } from './migrations.js';
export { EDGE_SNAPSHOT_EVERY } from './tree.js';
export { createSqliteReceiptStore };

/**
 * The receipt store over a database migrated with `receiptMigrations`, and the unit of work over the same
 * connection (the outbox's SQLite adapter writes with its transactions, so a receipt and its events commit together).
 */
export function sqliteReceiptStorage(database: SqliteDatabase): ReceiptStorage {
  return { store: createSqliteReceiptStore(database), unitOfWork: createSqliteUnitOfWork(database) };
}
