import type { PostgresPool } from '../../store/postgres/database.js';
import type { Approvals } from '../ports.js';
import { PostgresApprovals } from './approvals.js';

export { postgresApprovalMigrations } from './migrations.js';

/** The approvals port on the gateway's PostgreSQL database (migrated with `postgresApprovalMigrations`). */
export function postgresApprovals(pool: PostgresPool): Approvals {
  return new PostgresApprovals(pool);
}
