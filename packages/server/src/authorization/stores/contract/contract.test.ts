import { join } from 'node:path';
import { temporaryDirectory } from '../../../../../../test-support/cli.js';
import { postgresForThisFile } from '../../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../../test/support/databases.js';
import { openDatabase } from '../../../store/sqlite/database.js';
import { openPostgres } from '../../../store/postgres/database.js';
import { postgresEphemeralStateMigrations } from '../../../store/postgres/ephemeral-state.js';
import { PostgresThrottles, postgresAuthorizationStores, postgresSessionMigrations } from '../postgres/index.js';
import { sessionMigrations, sqliteAuthorizationStores } from '../sqlite/index.js';
import { authorizationCodesContract } from './authorization-codes.contract.js';
import { registeredClientsContract } from './clients.contract.js';
import type { AuthorizationStoresFactory } from './harness.js';
import { refreshTokensContract } from './refresh-tokens.contract.js';
import { sessionsContract } from './sessions.contract.js';
import { throttlesContract, type ThrottlesFactory } from './throttles.contract.js';

/** Each test: a fresh SQLite file in a temporary directory, migrated as the gateway migrates it. */
const sqlite: AuthorizationStoresFactory = async () => {
  const directory = await temporaryDirectory('gateway-authorization-stores-');
  const database = openDatabase(join(directory.path, 'gateway.db'), sessionMigrations);
  return {
    stores: sqliteAuthorizationStores(database),
    async close() {
      database.close();
      await directory.cleanup();
    },
  };
};

/** Each test: a fresh database on this file's PostgreSQL (Debian's server, started for the file), migrated. */
const postgres = postgresForThisFile();
const postgresStores: AuthorizationStoresFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresSessionMigrations);
  return { stores: postgresAuthorizationStores(database.pool), close: database.close };
};

/** Every suite on every adapter: the same rules, unchanged, whatever holds the rows. */
const adapters: Array<[name: string, factory: AuthorizationStoresFactory]> = [
  ['SQLite', sqlite],
  ['PostgreSQL', postgresStores],
];
for (const [name, factory] of adapters) {
  sessionsContract(name, factory);
  authorizationCodesContract(name, factory);
  refreshTokensContract(name, factory);
  registeredClientsContract(name, factory);
}

/**
 * The throttles on PostgreSQL: two pools on one fresh database (two replicas). Their SQLite and memory adapters run
 * the same suite from ../sqlite/sqlite.test.ts and ../memory/memory.test.ts.
 */
const postgresThrottles: ThrottlesFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresEphemeralStateMigrations);
  const replica = openPostgres(database.url, { max: 5 });
  return {
    first: new PostgresThrottles(database.pool),
    second: new PostgresThrottles(replica),
    async close() {
      await replica.end();
      await database.close();
    },
  };
};
throttlesContract('PostgreSQL', postgresThrottles);
