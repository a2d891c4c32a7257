import { describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../test/support/databases.js';
import { ephemeralStateContract, type EphemeralStateFactory } from '../contract/ephemeral-state.contract.js';
import { openPostgres } from './database.js';
import { postgresEphemeralState, postgresEphemeralStateMigrations } from './ephemeral-state.js';

/** Each test: a fresh database on this file's PostgreSQL and two pools on it (two replicas). */
const postgres = postgresForThisFile();
const postgresFactory: EphemeralStateFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresEphemeralStateMigrations);
  const replica = openPostgres(database.url, { max: 5 });
  return {
    first: postgresEphemeralState(database.pool),
    second: postgresEphemeralState(replica),
    async close() {
      await replica.end();
      await database.close();
    },
  };
};

ephemeralStateContract('PostgreSQL', postgresFactory);

describe('PostgreSQL ephemeral state on two replicas at once', () => {
  it('of many concurrent takes of one key and claims of another, with every connection open, exactly one of each wins', async () => {
    const database = await freshPostgresDatabase(postgres.server, postgresEphemeralStateMigrations);
    const replica = openPostgres(database.url, { max: 6 });
    try {
      for (const pool of [database.pool, replica]) {
        const clients = await Promise.all(Array.from({ length: 5 }, () => pool.connect()));
        for (const client of clients) client.release();
      }
      const replicas = [postgresEphemeralState(database.pool), postgresEphemeralState(replica)];
      const now = Date.now();
      await replicas[0]!.put('pending', 'consent-1', 'the request', now + 60_000);
      const takes = await Promise.all(Array.from({ length: 10 }, (_, index) => replicas[index % 2]!.take('pending', 'consent-1', now)));
      expect(takes.filter((value) => value !== undefined)).toEqual(['the request']);
      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, index) => replicas[index % 2]!.claimOnce('request-state', 'nonce-1', now + 60_000, now)),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
    } finally {
      await replica.end();
      await database.close();
    }
  });
});
