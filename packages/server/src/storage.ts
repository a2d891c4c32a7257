import { GatewayError, type LoadedConfig } from '@gateway/core';
import type { DoctorFinding, Vault } from '@gateway/runtime';
import { postgresApprovalMigrations } from './approvals/postgres/migrations.js';
import { postgresSessionMigrations } from './authorization/stores/postgres/migrations.js';
import { postgresLinkedAccountMigrations } from './credentials/person/postgres/migrations.js';
import { postgresChangeMigrations } from './store/postgres/change-migrations.js';
import { postgresEphemeralStateMigrations } from './store/postgres/ephemeral-state.js';
import type { PostgresPool } from './store/postgres/database.js';
import { postgresLeaseMigrations } from './store/postgres/leases.js';
import { postgresMigrationState } from './store/postgres/migrate.js';
import type { Migration } from './store/schema/migration.js';

/**
 * Which storage the gateway runs on (`storage` in gateway.yaml): SQLite, the embedded default, or PostgreSQL for
 * several replicas. Every store is a port with a SQLite adapter; this file says which have a PostgreSQL one yet,
 * gathers the PostgreSQL migrations of those that do, and checks a PostgreSQL database for `gateway doctor`.
 * node-postgres is loaded only when a database is checked: a gateway on SQLite never loads it (about 15 MB).
 */

/** The gateway's stores and whether each has a PostgreSQL adapter (docs/deployment.md, "PostgreSQL: what works now"). */
export const POSTGRES_ADAPTERS: ReadonlyArray<{ stores: string; hasAdapter: boolean }> = [
  { stores: 'sessions, authorization codes, refresh tokens and registered clients', hasAdapter: true },
  { stores: 'one-call approvals', hasAdapter: true },
  { stores: 'linked accounts of per-person logins (metadata; the tokens are in the vault)', hasAdapter: true },
  { stores: 'leases (the drift leader)', hasAdapter: true },
  { stores: "sign-in and consent state (browser sessions, pending consent requests, retries' spent requestStates)", hasAdapter: true },
  { stores: 'throttles (sign-in, /authorize and admin-token limits)', hasAdapter: true },
  { stores: 'the change feed (revocations, drift blocks, publications and paused endpoints announced to every replica)', hasAdapter: true },
  { stores: 'receipts and checkpoints', hasAdapter: false },
  { stores: 'outbox and delivery marks', hasAdapter: false },
  { stores: 'drift state and proposals', hasAdapter: false },
];

/** Every PostgreSQL migration of the stores that have an adapter, as one list (each area keeps its own ids). */
export const postgresMigrations: readonly Migration[] = [
  ...postgresSessionMigrations,
  ...postgresEphemeralStateMigrations,
  ...postgresApprovalMigrations,
  ...postgresLinkedAccountMigrations,
  ...postgresLeaseMigrations,
  ...postgresChangeMigrations,
];

/** The stores `storage.kind: postgres` still lacks, in the order of POSTGRES_ADAPTERS. */
export function storesWithoutPostgresAdapter(): string[] {
  return POSTGRES_ADAPTERS.filter((entry) => !entry.hasAdapter).map((entry) => entry.stores);
}

function incompleteMessage(missing: readonly string[]): string {
  return (
    `storage.kind postgres cannot be served yet: these stores have no PostgreSQL adapter, so the gateway would run half ` +
    `on SQLite: ${missing.join('; ')} (docs/deployment.md, "PostgreSQL: what works now"). Serve with storage.kind sqlite ` +
    '(the default) until then; `gateway doctor` already checks the PostgreSQL connection and its migrations'
  );
}

/**
 * Refuses to serve on a storage that is not whole: with `storage.kind: postgres` while some stores have no
 * PostgreSQL adapter, serve would keep part of its state in a local SQLite file that other replicas never see.
 */
export function assertServableStorage(config: LoadedConfig['config']): void {
  if ((config.storage?.kind ?? 'sqlite') !== 'postgres') return;
  const missing = storesWithoutPostgresAdapter();
  if (missing.length > 0) throw new GatewayError('STORAGE_POSTGRES_INCOMPLETE', incompleteMessage(missing));
}

/** `gateway doctor`'s findings on the storage: for PostgreSQL, the connection string, the connection, the migrations. */
export async function storageFindings(loaded: LoadedConfig, vault: Vault): Promise<DoctorFinding[]> {
  const storage = loaded.config.storage;
  if (storage?.kind !== 'postgres' || !storage.url) return [];
  const missing = storesWithoutPostgresAdapter();
  const incomplete: DoctorFinding[] =
    missing.length === 0
      ? []
      : [
          {
            check: 'storage',
            level: 'error',
            code: 'STORAGE_POSTGRES_INCOMPLETE',
            message: incompleteMessage(missing),
            fix: 'set storage.kind: sqlite (or remove storage) in gateway.yaml to serve now',
          },
        ];
  return [...(await postgresFindings(storage.url, vault)), ...incomplete];
}

async function postgresFindings(secretName: string, vault: Vault): Promise<DoctorFinding[]> {
  const { checkReachable, describeDatabase, openPostgres, parseConnectionString } = await import('./store/postgres/database.js');
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
