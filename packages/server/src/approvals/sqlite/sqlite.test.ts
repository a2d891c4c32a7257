import { join } from 'node:path';
import { temporaryDirectory } from '../../../../../test-support/cli.js';
import { openDatabase } from '../../store/sqlite/database.js';
import { approvalsContract, type ApprovalsFactory } from '../contract/approvals.contract.js';
import { approvalMigrations, sqliteApprovals } from './index.js';

/** Each test: a fresh SQLite file, and a second connection to it (another process of `serve --workers`). */
const sqlite: ApprovalsFactory = async () => {
  const directory = await temporaryDirectory('gateway-approvals-');
  const path = join(directory.path, 'gateway.db');
  const database = openDatabase(path, approvalMigrations);
  const other = openDatabase(path, approvalMigrations);
  return {
    approvals: sqliteApprovals(database),
    second: sqliteApprovals(other),
    async close() {
      database.close();
      other.close();
      await directory.cleanup();
    },
  };
};

approvalsContract('SQLite', sqlite);
