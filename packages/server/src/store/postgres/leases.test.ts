import { describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../test/support/databases.js';
import { leasesContract, type LeasesFactory } from '../contract/leases.contract.js';
import { openPostgres } from './database.js';
import { postgresLeaseMigrations, postgresLeases } from './leases.js';
import { PostgresUnitOfWork } from './unit-of-work.js';

/** Each test: a fresh database on this file's PostgreSQL and two pools on it (two replicas). */
const postgres = postgresForThisFile();
const postgresFactory: LeasesFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresLeaseMigrations);
  const replica = openPostgres(database.url, { max: 5 });
  return {
    first: postgresLeases(database.pool),
    second: postgresLeases(replica),
    unitOfWork: new PostgresUnitOfWork(database.pool),
    async close() {
      await replica.end();
      await database.close();
    },
  };
};

leasesContract('PostgreSQL', postgresFactory);

describe('PostgreSQL leases on two replicas at once', () => {
  it('a take by another replica waits for the unit of work that checked the lease (its fenced write commits first)', async () => {
    const database = await freshPostgresDatabase(postgres.server, postgresLeaseMigrations);
    const replica = openPostgres(database.url, { max: 2 });
    try {
      const [first, second] = [postgresLeases(database.pool), postgresLeases(replica)];
      const now = Date.now();
      const lease = (await first.take('checkpoint-signer', 'a', 1000, now))!;
      const events: string[] = [];
      let taking: Promise<unknown> | undefined;
      await new PostgresUnitOfWork(database.pool).run(async (tx) => {
        expect(await first.isHeld(tx, 'checkpoint-signer', 'a', lease.token)).toBe(true);
        // Expired: the other replica may take it, but only once this unit of work has ended.
        taking = second.take('checkpoint-signer', 'b', 1000, now + 5000).then(() => events.push('taken'));
        await new Promise((resolve) => setTimeout(resolve, 300));
        events.push('committed');
      });
      await taking;
      expect(events).toEqual(['committed', 'taken']);
    } finally {
      await replica.end();
      await database.close();
    }
  });

  it('of many concurrent takes of a free lease, with every connection already open, exactly one succeeds', async () => {
    const database = await freshPostgresDatabase(postgres.server, postgresLeaseMigrations);
    const replica = openPostgres(database.url, { max: 6 });
    try {
      for (const pool of [database.pool, replica]) {
        const clients = await Promise.all(Array.from({ length: 5 }, () => pool.connect()));
        for (const client of clients) client.release();
      }
      const replicas = [postgresLeases(database.pool), postgresLeases(replica)];
      const now = Date.now();
      const takes = await Promise.all(
        Array.from({ length: 10 }, (_, index) => replicas[index % 2]!.take('checkpoint-signer', `replica-${index}`, 60_000, now)),
      );
      expect(takes.filter((lease) => lease !== undefined)).toHaveLength(1);
    } finally {
      await replica.end();
      await database.close();
    }
  });
});
