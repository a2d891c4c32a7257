/**
 * The PostgreSQL storage (../storage.ts's `GatewayStorage`): one pool over the database whose connection string is
 * the vault secret `storage.url` names, migrated at start (every area's PostgreSQL migrations, one replica at a
 * time under an advisory lock), and each area's stores from its own `postgres/` factory. Several replicas on one
 * database share everything the gateway keeps; nothing is in a local file (docs/deployment.md).
 */
import { DEFAULT_POSTGRES_POOL_SIZE, GatewayError } from '@gateway/core';
import type { Vault } from '@gateway/runtime';
import type { Logger } from 'pino';
import { postgresApprovals } from '../../approvals/postgres/index.js';
import { postgresAuthorizationPorts } from '../../authorization/stores/postgres/index.js';
import { postgresLinkedAccounts } from '../../credentials/person/postgres/index.js';
import { postgresDriftStore } from '../../drift/postgres/index.js';
import { postgresOutboxStore } from '../../outbox/postgres/index.js';
import { postgresReceiptStorage } from '../../receipts/postgres/index.js';
import { postgresMigrations } from '../../storage.js';
import {
  checkReachable,
  describeDatabase,
  openPostgres,
  parseConnectionString,
  vaultDatabaseShared,
} from '../../store/postgres/database.js';
import { openPostgresChangeFeed } from '../../store/postgres/changes.js';
import { postgresEphemeralState } from '../../store/postgres/ephemeral-state.js';
import { postgresLeases } from '../../store/postgres/leases.js';
import { migratePostgres } from '../../store/postgres/migrate.js';
import type { Closers } from '../closers.js';
import type { GatewayStorage } from '../storage.js';

/** The connection string the vault keeps under `secretName` (a secret: only its host, port and database are ever shown). */
async function connectionStringOf(vault: Vault, secretName: string): Promise<string> {
  // A vault that cannot be read says why in its own words (VAULT_FILE_INVALID, VAULT_KEY_INVALID, …): only a
  // secret the vault does not have is a missing connection string.
  const value = await vault.get(secretName);
  if (value === undefined) {
    throw new GatewayError(
      'DATABASE_URL_MISSING',
      `the vault has no secret '${secretName}', which storage.url names: the PostgreSQL connection string ` +
        `(gateway secrets set ${secretName})`,
    );
  }
  return parseConnectionString(value, secretName);
}

export async function openPostgresStorage(
  storage: { url: string; poolSize?: number | undefined },
  vault: Vault,
  logger: Logger,
  closers: Closers,
): Promise<GatewayStorage> {
  const secretName = storage.url;
  const connectionString = await connectionStringOf(vault, secretName);
  // The gateway's database holds no secret, not even sealed ones: the postgres vault lives in a database of its own.
  const shared = vaultDatabaseShared(vault, connectionString);
  if (shared) throw shared;
  const pool = openPostgres(connectionString, {
    max: storage.poolSize ?? DEFAULT_POSTGRES_POOL_SIZE,
    onIdleError: (error) =>
      logger.warn({ database: describeDatabase(connectionString) }, `a PostgreSQL connection dropped: ${error.message}`),
  });
  // First in, last out: every area's closer (the receipt log's final checkpoint) still has the pool.
  closers.add(() => pool.end());
  await checkReachable(pool, connectionString);
  const applied = await migratePostgres(pool, postgresMigrations);
  if (applied.length > 0) logger.info({ migrations: applied }, `migrated the PostgreSQL database ${describeDatabase(connectionString)}`);
  // LISTEN on a connection of its own; a drop is reconnected and caught up (docs/deployment.md, "Changes between replicas").
  const changes = await openPostgresChangeFeed(pool, connectionString, {
    onError: (error) => logger.warn({ error: (error as Error)?.message }, 'change feed'),
  });
  closers.add(() => changes.close());
  return {
    kind: 'postgres',
    // Replicas always share the ephemeral state and the throttles' counts: they are in the database.
    ephemeralState: () => postgresEphemeralState(pool),
    authorizationStores: ({ ephemeral }) => postgresAuthorizationPorts(pool, ephemeral),
    receiptStorage: () => postgresReceiptStorage(pool),
    outboxStore: () => postgresOutboxStore(pool),
    driftStore: () => postgresDriftStore(pool),
    leases: () => postgresLeases(pool),
    approvals: () => postgresApprovals(pool),
    linkedAccounts: () => postgresLinkedAccounts(pool),
    changeFeed: () => changes,
  };
}
