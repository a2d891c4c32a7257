import { postgresForThisFile } from '../../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../../test/support/databases.js';
import { linkedAccountsContract, type LinkedAccountsFactory } from '../contract/linked-accounts.contract.js';
import { postgresLinkedAccountMigrations, postgresLinkedAccounts } from './index.js';

/** Each test: a fresh database on this file's PostgreSQL, migrated as the gateway migrates it. */
const postgres = postgresForThisFile();
const postgresFactory: LinkedAccountsFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresLinkedAccountMigrations);
  return { accounts: postgresLinkedAccounts(database.pool), close: database.close };
};

linkedAccountsContract('PostgreSQL', postgresFactory);
