import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../../../../../test-support/cli.js';
import { openDatabase } from '../../store/sqlite/database.js';
import { driftStoreContract, type DriftStoreFactory } from '../contract/drift-store.contract.js';
import { driftMigrations, sqliteDriftStore } from './index.js';

/** Each test: a fresh SQLite file in a temporary directory, migrated as the gateway migrates it, opened twice. */
const sqlite: DriftStoreFactory = async () => {
  const directory = await temporaryDirectory('gateway-drift-store-');
  const path = join(directory.path, 'gateway.db');
  const databases = [openDatabase(path, driftMigrations), openDatabase(path, driftMigrations)];
  return {
    store: sqliteDriftStore(databases[0]!),
    other: sqliteDriftStore(databases[1]!),
    async close() {
      for (const database of databases) database.close();
      await directory.cleanup();
    },
  };
};

driftStoreContract('SQLite', sqlite);

describe('the SQLite adapter', () => {
  it('is the only part of the drift area that names better-sqlite3, SqliteDatabase or prepare()', () => {
    const area = join(dirname(fileURLToPath(import.meta.url)), '..');
    const naming = readdirSync(area, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith('sqlite'))
      .filter((file) => /better-sqlite3|SqliteDatabase|\.prepare\(/.test(readFileSync(join(area, file), 'utf8')));
    expect(naming).toEqual([]);
  });
});
