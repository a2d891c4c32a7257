import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { temporaryDirectory } from '../../../../test-support/cli.js';
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
