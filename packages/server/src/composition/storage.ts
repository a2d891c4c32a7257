/**
 * Where the gateway keeps its state: the SQLite database in the data directory (every area's migrations, WAL
 * checkpoints on a thread of their own). Each area builds its stores from it through its `sqlite/` factory; a
 * PostgreSQL storage would slot in here beside it.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { approvalMigrations } from '../approvals/sqlite/index.js';
import { authorizationMigrations } from '../authorization/index.js';
import { linkedAccountMigrations } from '../credentials/person/sqlite/index.js';
import { driftMigrations } from '../drift/sqlite/index.js';
import { outboxMigrations } from '../outbox/sqlite/index.js';
import { receiptMigrations } from '../receipts/sqlite/index.js';
import { startBackgroundCheckpointer } from '../store/sqlite/checkpointer.js';
import { openDatabase, type Migration, type SqliteDatabase } from '../store/sqlite/database.js';
import { leaseMigrations } from '../store/sqlite/leases.js';
import type { Closers } from './closers.js';

/** Every area's tables, in the order they are created. */
const MIGRATIONS: readonly Migration[] = [
  ...driftMigrations,
  ...leaseMigrations,
  ...authorizationMigrations,
  ...receiptMigrations,
  ...outboxMigrations,
  ...linkedAccountMigrations,
  ...approvalMigrations,
];

export function openSqliteStorage(dataDirectory: string, logger: Logger, closers: Closers): SqliteDatabase {
  const databasePath = join(dataDirectory, 'gateway.db');
  const database = openDatabase(databasePath, MIGRATIONS);
  closers.add(() => {
    database.close();
  });
  // WAL checkpoints (the only fsyncs under synchronous = NORMAL) run on a thread of their own, not inside a
  // tool call's receipt commit (docs/receipts.md#cost-per-call).
  const checkpointer = startBackgroundCheckpointer(database, databasePath, (message) => logger.warn(message));
  closers.add(() => checkpointer.stop());
  return database;
}
