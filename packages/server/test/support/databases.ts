import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import type { PostgresServer } from '../../../../test-support/postgres.js';
import { openPostgres, type PostgresPool } from '../../src/store/postgres/database.js';
import { migratePostgres } from '../../src/store/postgres/migrate.js';
import { openDatabase, type Migration, type SqliteDatabase } from '../../src/store/sqlite/database.js';

/**
 * Two "workers" for each test of the calling file: two connections to one fresh database file, opened before
 * each test and closed after it. Read `first` and `second` inside a test (they are replaced for every test).
 */
export function twoConnectionsEachTest(prefix: string, migrations: Migration[]): { first: SqliteDatabase; second: SqliteDatabase } {
  const connections = {} as { first: SqliteDatabase; second: SqliteDatabase };
  let directory: Awaited<ReturnType<typeof temporaryDirectory>>;
  beforeEach(async () => {
    directory = await temporaryDirectory(prefix);
    connections.first = openDatabase(join(directory.path, 'gateway.db'), migrations);
    connections.second = openDatabase(join(directory.path, 'gateway.db'), migrations);
  });
  afterEach(async () => {
    connections.first.close();
    connections.second.close();
    await directory.cleanup();
  });
  return connections;
}

/**
 * A fresh database on the file's test PostgreSQL (test-support/postgres.ts), migrated as the gateway migrates it,
 * with a pool over it; `close` ends the pool (the database goes with the cluster). What a contract suite's
 * PostgreSQL factory builds its stores on.
 */
export async function freshPostgresDatabase(
  server: PostgresServer,
  migrations: readonly Migration[],
): Promise<{ pool: PostgresPool; url: string; close: () => Promise<void> }> {
  const url = await server.createDatabase();
  const pool = openPostgres(url, { max: 5 });
  await migratePostgres(pool, migrations);
  return { pool, url, close: () => pool.end() };
}
