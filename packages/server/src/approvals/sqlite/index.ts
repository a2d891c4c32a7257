import type { SqliteDatabase } from '../../store/sqlite/database.js';
import type { Approvals } from '../ports.js';
import { SqliteApprovals } from './approvals.js';

export { approvalMigrations } from './migrations.js';

/** The approvals port on the gateway's SQLite database (migrated with `approvalMigrations`). */
export function sqliteApprovals(database: SqliteDatabase): Approvals {
  return new SqliteApprovals(database);
}
