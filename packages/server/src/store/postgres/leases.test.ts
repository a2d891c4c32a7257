import { describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../test/support/databases.js';
import { leasesContract, type LeasesFactory } from '../contract/leases.contract.js';
import { openPostgres } from './database.js';
import { postgresLeaseMigrations, postgresLeases } from './leases.js';

/** Each test: a fresh database on this file's PostgreSQL and two pools on it (two replicas). */
const postgres = postgresForThisFile();
const postgresFactory: LeasesFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresLeaseMigrations);
  const replica = openPostgres(database.url, { max: 5 });
  return {
    first: postgresLeases(database.pool),
    second: postgresLeases(replica),
    async close() {
      await replica.end();
      await database.close();
    },
  };
};

leasesContract('PostgreSQL', postgresFactory);

describe('PostgreSQL leases on two replicas at once', () => {
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
