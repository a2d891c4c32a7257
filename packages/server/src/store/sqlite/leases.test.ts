import { join } from 'node:path';
import { temporaryDirectory } from '../../../../../test-support/cli.js';
import { leasesContract, type LeasesFactory } from '../contract/leases.contract.js';
import { openDatabase } from './database.js';
import { leaseMigrations, sqliteLeases } from './leases.js';
import { createSqliteUnitOfWork } from './unit-of-work.js';

/** Each test: a fresh SQLite file, opened twice (two connections, as two processes hold it). */
const sqlite: LeasesFactory = async () => {
  const directory = await temporaryDirectory('gateway-leases-');
  const path = join(directory.path, 'gateway.db');
  const databases = [openDatabase(path, leaseMigrations), openDatabase(path, leaseMigrations)];
  return {
    first: sqliteLeases(databases[0]!),
    second: sqliteLeases(databases[1]!),
    unitOfWork: createSqliteUnitOfWork(databases[0]!),
    async close() {
      for (const database of databases) database.close();
      await directory.cleanup();
    },
  };
};

leasesContract('SQLite', sqlite);
