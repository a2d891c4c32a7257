/**
 * The SQLite storage (../storage.ts's `GatewayStorage`): the database in the data directory with every area's
 * migrations, WAL checkpoints on a thread of their own, and each area's stores from its own `sqlite/` factory.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { approvalMigrations } from '../../approvals/sqlite/index.js';
import { authorizationMigrations } from '../../authorization/index.js';
import { linkedAccountMigrations } from '../../credentials/person/sqlite/index.js';
import { driftMigrations } from '../../drift/sqlite/index.js';
import { outboxMigrations } from '../../outbox/sqlite/index.js';
import { receiptMigrations } from '../../receipts/sqlite/index.js';
import { startBackgroundCheckpointer } from '../../store/sqlite/checkpointer.js';
import { openDatabase, type Migration } from '../../store/sqlite/database.js';
import { changeMigrations, sqliteChangeFeed } from '../../store/sqlite/changes.js';
import { leaseMigrations } from '../../store/sqlite/leases.js';
import { MemoryEphemeralState } from '../../store/memory/ephemeral-state.js';
import { SqliteEphemeralState } from '../../store/sqlite/ephemeral-state.js';
import { sqliteApprovals } from '../../approvals/sqlite/index.js';
import { openSqliteAuthorizationStores } from '../../authorization/stores/sqlite/index.js';
import { sqliteLinkedAccounts } from '../../credentials/person/sqlite/index.js';
import { sqliteDriftStore } from '../../drift/sqlite/index.js';
import { sqliteOutboxStore } from '../../outbox/sqlite/index.js';
import { sqliteReceiptStorage } from '../../receipts/sqlite/index.js';
import { sqliteLeases } from '../../store/sqlite/leases.js';
import type { Closers } from '../closers.js';
import type { GatewayStorage } from '../storage.js';

/** Every area's tables, in the order they are created. */
const MIGRATIONS: readonly Migration[] = [
  ...driftMigrations,
  ...leaseMigrations,
  ...authorizationMigrations,
  ...receiptMigrations,
  ...outboxMigrations,
  ...linkedAccountMigrations,
  ...approvalMigrations,
  ...changeMigrations,
];

export function openSqliteStorage(dataDirectory: string, logger: Logger, closers: Closers): GatewayStorage {
  const databasePath = join(dataDirectory, 'gateway.db');
  const database = openDatabase(databasePath, MIGRATIONS);
  closers.add(() => {
    database.close();
  });
  // WAL checkpoints (the only fsyncs under synchronous = NORMAL) run on a thread of their own, not inside a
  // tool call's receipt commit (docs/receipts.md#cost-per-call).
  const checkpointer = startBackgroundCheckpointer(database, databasePath, (message) => logger.warn(message));
  closers.add(() => checkpointer.stop());
  const changes = sqliteChangeFeed(database, { onError: (error) => logger.warn({ error: (error as Error)?.message }, 'change feed') });
  closers.add(() => changes.close());
  return {
    kind: 'sqlite',
    // One process keeps it in memory and writes nothing for it; workers share it through the database.
    ephemeralState: ({ sharedByWorkers }) => (sharedByWorkers ? new SqliteEphemeralState(database) : new MemoryEphemeralState()),
    authorizationStores: (options) => openSqliteAuthorizationStores(database, options),
    receiptStorage: () => sqliteReceiptStorage(database),
    outboxStore: () => sqliteOutboxStore(database),
    driftStore: () => sqliteDriftStore(database),
    leases: () => sqliteLeases(database),
    approvals: () => sqliteApprovals(database),
    linkedAccounts: () => sqliteLinkedAccounts(database),
    changeFeed: () => changes,
  };
}
