import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../../../../../../test-support/cli.js';
import { openDatabase } from '../../../store/sqlite/database.js';
import { ephemeralStateMigrations } from '../../../store/sqlite/ephemeral-state.js';
import { throttlesContract, type ThrottlesFactory } from '../contract/throttles.contract.js';
import { SqliteThrottles } from './index.js';

/** Each test: a fresh SQLite file opened twice (two workers' connections). */
const sqliteThrottles: ThrottlesFactory = async () => {
  const directory = await temporaryDirectory('gateway-throttles-');
  const path = join(directory.path, 'gateway.db');
  const databases = [openDatabase(path, ephemeralStateMigrations), openDatabase(path, ephemeralStateMigrations)] as const;
  return {
    first: new SqliteThrottles(databases[0]),
    second: new SqliteThrottles(databases[1]),
    async close() {
      for (const database of databases) database.close();
      await directory.cleanup();
    },
  };
};

throttlesContract('SQLite', sqliteThrottles);

// Sessions, codes, refresh tokens and clients: their suites run on SQLite and PostgreSQL from ../contract/contract.test.ts.
describe('the SQLite adapters', () => {
  it('are the only files of the authorization area that name better-sqlite3, SqliteDatabase or prepare()', () => {
    const area = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
    const naming = readdirSync(area, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith(join('stores', 'sqlite')))
      .filter((file) => /better-sqlite3|SqliteDatabase|\.prepare\(/.test(readFileSync(join(area, file), 'utf8')))
      .map((file) => relative(area, join(area, file)).split('\\').join('/'))
      .sort();
    expect(naming).toEqual([]);
  });
});
