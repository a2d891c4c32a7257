import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../../../../../../test-support/cli.js';
import { openDatabase } from '../../../store/sqlite/database.js';
import { linkedAccountsContract, type LinkedAccountsFactory } from '../contract/linked-accounts.contract.js';
import { linkedAccountMigrations, sqliteLinkedAccounts } from './index.js';

/** Each test: a fresh SQLite file in a temporary directory, migrated as the gateway migrates it. */
const sqlite: LinkedAccountsFactory = async () => {
  const directory = await temporaryDirectory('gateway-linked-accounts-');
  const database = openDatabase(join(directory.path, 'gateway.db'), linkedAccountMigrations);
  return {
    accounts: sqliteLinkedAccounts(database),
    async close() {
      database.close();
      await directory.cleanup();
    },
  };
};

linkedAccountsContract('SQLite', sqlite);

describe('the SQLite adapter of linked accounts', () => {
  it('is the only place of per-person logins that names better-sqlite3, SqliteDatabase or prepare()', () => {
    const area = join(dirname(fileURLToPath(import.meta.url)), '..');
    const naming = readdirSync(area, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith('sqlite'))
      .filter((file) => /better-sqlite3|SqliteDatabase|\.prepare\(/.test(readFileSync(join(area, file), 'utf8')));
    expect(naming).toEqual([]);
  });
});
