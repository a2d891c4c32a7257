import type { PostgresPool } from '../../../store/postgres/database.js';
import type { LinkedAccounts } from '../ports.js';
import { PostgresLinkedAccounts } from './linked-accounts.js';

export { postgresLinkedAccountMigrations } from './migrations.js';

/** The PostgreSQL adapter of the linked accounts port, over a database migrated with `postgresLinkedAccountMigrations`. */
export function postgresLinkedAccounts(pool: PostgresPool): LinkedAccounts {
  return new PostgresLinkedAccounts(pool);
}
