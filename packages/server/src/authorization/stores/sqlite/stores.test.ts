import { join } from 'node:path';
import { temporaryDirectory } from '../../../../../../test-support/cli.js';
import { openDatabase } from '../../../store/database.js';
import { authorizationCodesContract } from '../contract/authorization-codes.contract.js';
import { registeredClientsContract } from '../contract/clients.contract.js';
import type { AuthorizationStoresFactory } from '../contract/harness.js';
import { refreshTokensContract } from '../contract/refresh-tokens.contract.js';
import { sessionsContract } from '../contract/sessions.contract.js';
import { sessionMigrations, sqliteAuthorizationStores } from './index.js';

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

sessionsContract('SQLite', sqlite);
authorizationCodesContract('SQLite', sqlite);
refreshTokensContract('SQLite', sqlite);
registeredClientsContract('SQLite', sqlite);
