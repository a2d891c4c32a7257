import { join } from 'node:path';
import { temporaryDirectory } from '../../../../../test-support/cli.js';
import type { ChangeFeed } from '../changes.js';
import { changeFeedContract, type ChangeFeedsFactory } from '../contract/changes.contract.js';
import { changeMigrations, sqliteChangeFeed } from './changes.js';
import { openDatabase, type SqliteDatabase } from './database.js';
import { createSqliteUnitOfWork } from './unit-of-work.js';

/** Each test: a fresh SQLite file, one connection per feed (as the workers of `serve --workers` hold it). */
const sqlite: ChangeFeedsFactory = async () => {
  const directory = await temporaryDirectory('gateway-changes-');
  const path = join(directory.path, 'gateway.db');
  const databases: SqliteDatabase[] = [];
  const feeds: ChangeFeed[] = [];
  const open = () => {
    const database = openDatabase(path, changeMigrations);
    databases.push(database);
    const feed = sqliteChangeFeed(database);
    feeds.push(feed);
    return feed;
  };
  const first = open();
  const second = open();
  return {
    first,
    second,
    unitOfWork: createSqliteUnitOfWork(databases[0]!),
    openFeed: async () => open(),
    async close() {
      for (const feed of feeds) await feed.close();
      for (const database of databases) database.close();
      await directory.cleanup();
    },
  };
};

changeFeedContract('SQLite', sqlite);
