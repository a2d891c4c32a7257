import { afterEach, describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import type { Migration } from '../schema/migration.js';
import { openPostgres, type PostgresPool } from './database.js';
import { migratePostgres, postgresMigrationState } from './migrate.js';

const postgres = postgresForThisFile();
const pools: PostgresPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.end()));
});

async function freshDatabase(): Promise<string> {
  return postgres.server.createDatabase();
}
function pool(url: string): PostgresPool {
  const opened = openPostgres(url, { max: 2 });
  pools.push(opened);
  return opened;
}

const first: Migration = { id: 'demo-001', sql: 'CREATE TABLE demo (id BIGINT PRIMARY KEY); SELECT pg_sleep(0.2);' };
const second: Migration = { id: 'demo-002', sql: 'ALTER TABLE demo ADD COLUMN name TEXT NOT NULL DEFAULT $$x$$;' };

describe('PostgreSQL migrations', () => {
  it('apply in id order, once, recorded in schema_migrations; the state reads pending, applied and unknown ids', async () => {
    const database = pool(await freshDatabase());
    expect(await postgresMigrationState(database, [second, first])).toEqual({
      applied: [],
      pending: ['demo-001', 'demo-002'],
      unknown: [],
    });
    expect(await migratePostgres(database, [second, first])).toEqual(['demo-001', 'demo-002']);
    expect(await migratePostgres(database, [second, first])).toEqual([]);
    const { rows } = await database.query<{ id: string }>('SELECT id FROM schema_migrations ORDER BY applied_at, id');
    expect(rows.map((row) => row.id)).toEqual(['demo-001', 'demo-002']);
    expect(await postgresMigrationState(database, [first])).toEqual({
      applied: ['demo-001', 'demo-002'],
      pending: [],
      unknown: ['demo-002'],
    });
  });

  it('replicas starting together migrate one at a time: each step runs once and none of them fails', async () => {
    const url = await freshDatabase();
    const replicas = Array.from({ length: 4 }, () => pool(url));
    const applied = await Promise.all(replicas.map((replica) => migratePostgres(replica, [first, second])));
    expect(applied.flat().sort()).toEqual(['demo-001', 'demo-002']);
    const { rows } = await replicas[0]!.query<{ count: number }>('SELECT COUNT(*) AS count FROM schema_migrations');
    expect(rows[0]!.count).toBe(2);
  });

  it('a failing migration leaves nothing behind and releases the lock for the next attempt', async () => {
    const url = await freshDatabase();
    const database = pool(url);
    const broken: Migration = { id: 'demo-002', sql: 'CREATE TABLE half (id INT); SELECT no_such_function();' };
    await expect(migratePostgres(database, [first, broken])).rejects.toThrow(/no_such_function/);
    expect(await postgresMigrationState(database, [first, second])).toMatchObject({ applied: ['demo-001'], pending: ['demo-002'] });
    const { rows } = await database.query<{ present: boolean }>("SELECT to_regclass('half') IS NOT NULL AS present");
    expect(rows[0]!.present).toBe(false);
    // Another replica (another pool) takes the lock at once and applies the fixed step.
    expect(await migratePostgres(pool(url), [first, second])).toEqual(['demo-002']);
  });

  it('refuses a database migrated by a newer version (ids it does not know)', async () => {
    const database = pool(await freshDatabase());
    await migratePostgres(database, [first, second]);
    await expect(migratePostgres(database, [first])).rejects.toMatchObject({ code: 'DATABASE_MIGRATIONS_UNKNOWN', message: /demo-002/ });
  });
});
