import { describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../test/support/databases.js';
import type { ChangeFeed } from '../changes.js';
import { changeFeedContract, eventually, type ChangeFeedsFactory } from '../contract/changes.contract.js';
import { openPostgresChangeFeed, postgresChangeMigrations } from './changes.js';
import { openPostgres } from './database.js';
import { PostgresUnitOfWork } from './unit-of-work.js';

/** Each test: a fresh database on this file's PostgreSQL; each feed on a pool of its own (one replica each). */
const postgres = postgresForThisFile();
const postgresFactory: ChangeFeedsFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresChangeMigrations);
  const pools = [database.pool];
  const feeds: ChangeFeed[] = [];
  const open = async () => {
    const pool = openPostgres(database.url, { max: 3 });
    pools.push(pool);
    const feed = await openPostgresChangeFeed(pool, database.url);
    feeds.push(feed);
    return feed;
  };
  const first = await openPostgresChangeFeed(database.pool, database.url);
  feeds.push(first);
  const second = await open();
  return {
    first,
    second,
    unitOfWork: new PostgresUnitOfWork(database.pool),
    openFeed: open,
    async close() {
      for (const feed of feeds) await feed.close();
      for (const pool of pools.slice(1)) await pool.end();
      await database.close();
    },
  };
};

changeFeedContract('PostgreSQL', postgresFactory);

describe('PostgreSQL change feed across a restart', () => {
  it('a change published while a replica was reconnecting after a restart reaches it by the catch-up read', async () => {
    const database = await freshPostgresDatabase(postgres.server, postgresChangeMigrations);
    const publisherPool = openPostgres(database.url, { max: 2 });
    const caughtUp: number[] = [];
    // The first reconnect attempt comes 2 to 4 s after the loss: the change below is published before it.
    const subscriber = await openPostgresChangeFeed(database.pool, database.url, {
      reconnectMinMs: 4_000,
      onCaughtUp: (delivered) => caughtUp.push(delivered),
    });
    const publisher = await openPostgresChangeFeed(publisherPool, database.url);
    try {
      const heard: string[] = [];
      subscriber.subscribe('session-ended', (payload) => heard.push(payload.sessionId));
      await publisher.publish('session-ended', { sessionId: 'before-restart' });
      await eventually(() => heard.length === 1);

      await postgres.server.restart();
      await publisher.publish('session-ended', { sessionId: 'while-away' });
      expect(caughtUp).toEqual([]);
      expect(heard).toEqual(['before-restart']);

      await eventually(() => heard.length === 2, 15_000);
      expect(heard).toEqual(['before-restart', 'while-away']);
      expect(caughtUp).toEqual([1]);
      // Listening again: the next change comes by NOTIFY, within the bound.
      await publisher.publish('session-ended', { sessionId: 'after' });
      await eventually(() => heard.length === 3);
      expect(caughtUp).toEqual([1]);
    } finally {
      await subscriber.close();
      await publisher.close();
      await publisherPool.end();
      await database.close();
    }
  }, 40_000);
});
