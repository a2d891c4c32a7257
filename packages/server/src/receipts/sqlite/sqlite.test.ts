import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../../../../../test-support/cli.js';
import { openDatabase, type SqliteDatabase } from '../../store/sqlite/database.js';
import type { ReceiptStorageFactory } from '../contract/harness.js';
import { receiptStoreContract } from '../contract/receipt-store.contract.js';
import { receiptMigrations, sqliteReceiptStorage } from './index.js';

/** Each test: a fresh SQLite file in a temporary directory; each connection opens it as one gateway process does. */
const sqlite: ReceiptStorageFactory = async () => {
  const directory = await temporaryDirectory('gateway-receipt-stores-');
  const databases: SqliteDatabase[] = [];
  return {
    async connect() {
      const database = openDatabase(join(directory.path, 'gateway.db'), receiptMigrations);
      databases.push(database);
      return sqliteReceiptStorage(database);
    },
    async close() {
      for (const database of databases) database.close();
      await directory.cleanup();
    },
  };
};

receiptStoreContract('SQLite', sqlite);

describe('the SQLite adapter of the receipts area', () => {
  it('is the only part of the area that names better-sqlite3, SqliteDatabase or prepare()', () => {
    const area = join(dirname(fileURLToPath(import.meta.url)), '..');
    const naming = readdirSync(area, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith('sqlite'))
      .filter((file) => /better-sqlite3|SqliteDatabase|\.prepare\(/.test(readFileSync(join(area, file), 'utf8')))
      .map((file) => relative(area, join(area, file)).split('\\').join('/'));
    expect(naming).toEqual([]);
  });
});
