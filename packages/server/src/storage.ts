import type { LoadedConfig } from '@gateway/core';
import type { DoctorFinding, Vault } from '@gateway/runtime';
import { postgresApprovalMigrations } from './approvals/postgres/migrations.js';
import { postgresSessionMigrations } from './authorization/stores/postgres/migrations.js';
import { postgresLinkedAccountMigrations } from './credentials/person/postgres/migrations.js';
import { postgresDriftMigrations } from './drift/postgres/migrations.js';
import { postgresOutboxMigrations } from './outbox/postgres/migrations.js';
import { postgresReceiptMigrations } from './receipts/postgres/migrations.js';
import { postgresChangeMigrations } from './store/postgres/change-migrations.js';
import { postgresEphemeralStateMigrations } from './store/postgres/ephemeral-state.js';
import type { PostgresPool } from './store/postgres/database.js';
import { postgresLeaseMigrations } from './store/postgres/leases.js';
import { postgresMigrationState } from './store/postgres/migrate.js';
import type { Migration } from './store/schema/migration.js';

/**
 * Which storage the gateway runs on (`storage` in gateway.yaml): SQLite, the embedded default, or PostgreSQL for
 * several replicas, where every store has its adapter (composition/postgres/storage.ts). This file gathers the
 * PostgreSQL migrations and checks a PostgreSQL database for `gateway doctor`. node-postgres is loaded only when a
 * database is opened or checked: a gateway on SQLite never loads it (about 15 MB).
 */

/** Every area's PostgreSQL migrations, as one list (each area keeps its own ids, those of its SQLite adapter). */
export const postgresMigrations: readonly Migration[] = [
  ...postgresDriftMigrations,
  ...postgresLeaseMigrations,
  ...postgresSessionMigrations,
  ...postgresEphemeralStateMigrations,
  ...postgresReceiptMigrations,
  ...postgresOutboxMigrations,
  ...postgresLinkedAccountMigrations,
  ...postgresApprovalMigrations,
  ...postgresChangeMigrations,
];

/** `gateway doctor`'s findings on the storage: for PostgreSQL, the connection string, the connection, the migrations. */
export async function storageFindings(loaded: LoadedConfig, vault: Vault): Promise<DoctorFinding[]> {
  const storage = loaded.config.storage;
  if (storage?.kind !== 'postgres' || !storage.url) return [];
  return postgresFindings(storage.url, vault);
}

async function postgresFindings(secretName: string, vault: Vault): Promise<DoctorFinding[]> {
  const { checkReachable, describeDatabase, openPostgres, parseConnectionString, vaultDatabaseShared } = await import(
    './store/postgres/database.js'
  );
  const value = await vault.get(secretName).catch(() => undefined);
  if (value === undefined) {
    return [
      {
        check: 'storage',
        level: 'error',
        code: 'DATABASE_URL_MISSING',
        message: `the vault has no secret '${secretName}', which storage.url names: the PostgreSQL connection string`,
        fix: `printf '%s' 'postgres://<user>:<password>@<host>:5432/<database>' | gateway secrets set ${secretName}`,
      },
    ];
  }
  let connectionString: string;
  try {
    connectionString = parseConnectionString(value, secretName);
  } catch (error) {
    return [
      {
        check: 'storage',
        level: 'error',
        code: 'DATABASE_URL_INVALID',
        message: (error as Error).message,
        fix: `gateway secrets rotate ${secretName}   # a postgres://user:password@host:port/database URL`,
      },
    ];
  }
  const shared = vaultDatabaseShared(vault, connectionString);
  if (shared) {
    return [
      {
        check: 'storage',
        level: 'error',
        code: 'VAULT_DATABASE_SHARED',
        message: shared.message,
        fix: 'create a database and role for the vault (docs/vault.md) and point vault.postgres.url at it',
      },
    ];
  }
  const pool = openPostgres(connectionString, { max: 1 });
  try {
    return await databaseFindings(pool, describeDatabase(connectionString), () => checkReachable(pool, connectionString));
  } finally {
    await pool.end().catch(() => undefined);
  }
}

async function databaseFindings(pool: PostgresPool, where: string, checkReachable: () => Promise<void>): Promise<DoctorFinding[]> {
  try {
    await checkReachable();
  } catch (error) {
    return [
      {
        check: 'storage',
        level: 'error',
        code: 'DATABASE_UNREACHABLE',
        message: (error as Error).message,
        fix:
          `check that PostgreSQL answers at ${where}, that the user, password and database of the connection string exist, ` +
          'and that pg_hba.conf lets this host in',
      },
    ];
  }
  const findings: DoctorFinding[] = [{ check: 'storage', level: 'ok', message: `PostgreSQL database ${where} answers` }];
  const state = await postgresMigrationState(pool, postgresMigrations);
  if (state.unknown.length > 0) {
    findings.push({
      check: 'storage',
      level: 'error',
      code: 'DATABASE_MIGRATIONS_UNKNOWN',
      message: `the database was migrated by a newer gateway: ${state.unknown.join(', ')} unknown to this version`,
      fix: 'run the gateway version that migrated it (or newer)',
    });
  }
  if (state.pending.length > 0) {
    findings.push({
      check: 'storage',
      level: 'warning',
      code: 'DATABASE_MIGRATIONS_PENDING',
      message: `${state.pending.length} migration(s) not applied yet: ${state.pending.join(', ')}`,
      fix: '`gateway serve` applies them when it starts, one replica at a time (an advisory lock); the role needs CREATE on the schema',
    });
  } else if (state.unknown.length === 0) {
    findings.push({ check: 'storage', level: 'ok', message: `the database schema is current (${state.applied.length} migrations)` });
  }
  return findings;
}
