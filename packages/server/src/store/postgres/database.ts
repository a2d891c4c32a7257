import pg from 'pg';
import { GatewayError } from '@gateway/core';
import { describeDatabase, isPostgresUrl, type Vault } from '@gateway/runtime';

export { describeDatabase };

/**
 * The gateway's PostgreSQL connection: a pool of node-postgres clients over one connection string (a vault
 * secret, never logged: errors name the host, port and database only). Adapters of the ports query the pool
 * for one-statement steps and take one client for a transaction (`inTransaction`).
 */
export type PostgresPool = pg.Pool;
export type PostgresClient = pg.PoolClient;
/** What a query runs on: the pool (one statement) or the client of a transaction. */
export type Queryable = Pick<pg.Pool, 'query'>;

/** How long opening a connection may take before the attempt fails (DATABASE_UNREACHABLE). */
export const CONNECT_TIMEOUT_MS = 5_000;

const INT8_OID = 20;
/**
 * int8 (BIGINT columns: epoch milliseconds, `session-<n>` numbers; COUNT(*)) read as JavaScript numbers instead of
 * node-postgres's strings: every such value the gateway stores is far below 2^53. Per pool, not pg's global table.
 */
const gatewayTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** Checks a connection string's shape, naming only the vault secret it came from (the value is a secret). */
export function parseConnectionString(value: string, secretName: string): string {
  if (!isPostgresUrl(value.trim())) {
    throw new GatewayError(
      'DATABASE_URL_INVALID',
      `the vault secret '${secretName}' (storage.url) is not a connection string of the form postgres://user:password@host:port/database`,
    );
  }
  return value.trim();
}

/**
 * VAULT_DATABASE_SHARED when the `postgres` vault's values are in the database `connectionString` names: the
 * gateway's database holds no secret, not even sealed ones. Undefined otherwise (other vaults have no database).
 */
export function vaultDatabaseShared(vault: Pick<Vault, 'location'>, connectionString: string): GatewayError | undefined {
  if (vault.location === undefined || vault.location !== describeDatabase(connectionString)) return undefined;
  return new GatewayError(
    'VAULT_DATABASE_SHARED',
    `storage.url and vault.postgres.url name the same database (${vault.location}): give the vault a database and role of its own`,
  );
}

export interface OpenPostgresOptions {
  /** Clients in the pool (default 10). */
  max?: number;
  connectTimeoutMs?: number;
  /** An idle client lost its connection (a server restart): the next query opens a new one; this only reports it. */
  onIdleError?: (error: Error) => void;
}

/** A pool over `connectionString`; it connects lazily (`checkReachable` tries at once). */
export function openPostgres(connectionString: string, options: OpenPostgresOptions = {}): PostgresPool {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    application_name: 'gateway',
    types: gatewayTypes,
  });
  // Without a listener an idle client's error (the server restarted) would crash the process.
  pool.on('error', (error) => options.onIdleError?.(error));
  // The pool listens only to its idle clients: a client checked out (a transaction, a migration) whose connection
  // drops would emit an unhandled 'error' and end the process. The error reaches the query in flight (rejected) and
  // any later one (the client is no longer queryable); released, the broken client is discarded by the pool.
  pool.on('connect', (client) => client.on('error', ignoreCheckedOutClientError));
  return pool;
}

/** The error of a checked-out client's connection: its queries fail with it; nothing else to do here. */
function ignoreCheckedOutClientError(): void {}

/** The registered error for a database that refused or did not answer; the driver's reason, never the password. */
export function databaseUnreachableError(connectionString: string, cause: unknown): GatewayError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new GatewayError('DATABASE_UNREACHABLE', `cannot reach the PostgreSQL database ${describeDatabase(connectionString)}: ${reason}`, {
    cause,
  });
}

/** One round trip (`SELECT 1`), as DATABASE_UNREACHABLE when it fails. */
export async function checkReachable(pool: PostgresPool, connectionString: string): Promise<void> {
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    throw databaseUnreachableError(connectionString, error);
  }
}

/** The transaction runner (`@gateway/runtime`'s, which the `postgres` vault uses too). */
export { inTransaction } from '@gateway/runtime';
