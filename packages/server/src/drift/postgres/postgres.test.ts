import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../test/support/databases.js';
import { openPostgres } from '../../store/postgres/database.js';
import { driftStoreContract, type DriftStoreFactory } from '../contract/drift-store.contract.js';
import { driftMigrations } from '../sqlite/index.js';
import { postgresDriftMigrations, postgresDriftStore } from './index.js';

/** Each test: a fresh database on this file's PostgreSQL, and a second pool on it (another replica). */
const postgres = postgresForThisFile();
const postgresFactory: DriftStoreFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresDriftMigrations);
  const replica = openPostgres(database.url, { max: 5 });
  return {
    store: postgresDriftStore(database.pool),
    other: postgresDriftStore(replica),
    async close() {
      await replica.end();
      await database.close();
    },
  };
};

driftStoreContract('PostgreSQL', postgresFactory);

describe('the PostgreSQL drift store', () => {
  it('uses the SQLite migration ids, step for step', () => {
    expect(postgresDriftMigrations.map((migration) => migration.id)).toEqual(driftMigrations.map((migration) => migration.id));
  });

  it('is the only part of the drift area that names node-postgres or a PostgreSQL pool', () => {
    const area = join(dirname(fileURLToPath(import.meta.url)), '..');
    const naming = readdirSync(area, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith('postgres'))
      .filter((file) => /from 'pg'|PostgresPool|PostgresClient/.test(readFileSync(join(area, file), 'utf8')));
    expect(naming).toEqual([]);
  });
});
