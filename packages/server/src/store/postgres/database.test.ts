import { afterEach, describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import { checkReachable, describeDatabase, inTransaction, openPostgres, parseConnectionString, type PostgresPool } from './database.js';

const postgres = postgresForThisFile();
const pools: PostgresPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.end()));
});
function pool(url: string): PostgresPool {
  const opened = openPostgres(url, { max: 2, connectTimeoutMs: 2_000 });
  pools.push(opened);
  return opened;
}

describe('the PostgreSQL connection', () => {
  it('reads BIGINT and COUNT(*) as numbers (epoch milliseconds, session numbers)', async () => {
    const database = pool(await postgres.server.createDatabase());
    const { rows } = await database.query<{ at: number; count: number }>(
      'SELECT 1800000000000::bigint AS at, COUNT(*) AS count FROM pg_class',
    );
    expect(rows[0]!.at).toBe(1_800_000_000_000);
    expect(typeof rows[0]!.count).toBe('number');
  });

  it('a transaction commits when its work resolves and rolls back when it rejects', async () => {
    const database = pool(await postgres.server.createDatabase());
    await database.query('CREATE TABLE t (n INT)');
    await inTransaction(database, (client) => client.query('INSERT INTO t VALUES (1)'));
    await expect(
      inTransaction(database, async (client) => {
        await client.query('INSERT INTO t VALUES (2)');
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect((await database.query<{ n: number }>('SELECT n FROM t')).rows).toEqual([{ n: 1 }]);
  });

  it('a server restart during a transaction fails that transaction, never the process, and the pool goes on', async () => {
    const database = pool(await postgres.server.createDatabase());
    await database.query('CREATE TABLE t (n INT)');
    // The client is checked out (between two statements of its transaction) when every connection is closed: its
    // error must reach the transaction, not be an unhandled 'error' event (which ends a process under node-postgres).
    const outcome = inTransaction(database, async (client) => {
      await client.query('INSERT INTO t VALUES (1)');
      await postgres.server.restart();
      await client.query('INSERT INTO t VALUES (2)');
    }).then(
      () => 'committed',
      () => 'failed',
    );
    expect(await outcome).toBe('failed');
    await inTransaction(database, (client) => client.query('INSERT INTO t VALUES (3)'));
    expect((await database.query<{ n: number }>('SELECT n FROM t')).rows).toEqual([{ n: 3 }]);
  }, 60_000);

  it('an unreachable database or a wrong password is DATABASE_UNREACHABLE, naming where but never the password', async () => {
    const wrongPassword = postgres.server.url().replace(encodeURIComponent(postgres.server.password), 'not-the-password-42');
    const refused = `postgres://gateway_test:secret-pw-42@127.0.0.1:1/postgres`;
    for (const url of [wrongPassword, refused]) {
      const error = await checkReachable(pool(url), url).then(
        () => undefined,
        (caught: unknown) => caught as Error & { code?: string },
      );
      expect(error?.code).toBe('DATABASE_UNREACHABLE');
      expect(error?.message).toContain(describeDatabase(url));
      expect(error?.message).not.toMatch(/not-the-password-42|secret-pw-42/);
    }
    await checkReachable(pool(postgres.server.url()), postgres.server.url());
  });

  it('a vault value that is not a postgres:// URL is DATABASE_URL_INVALID, naming the secret, not the value', () => {
    expect(parseConnectionString(' postgresql://u:p@db:5432/gw ', 'database-url')).toBe('postgresql://u:p@db:5432/gw');
    for (const value of ['host=db password=hunter2', 'https://u:hunter2@db/gw']) {
      expect(() => parseConnectionString(value, 'database-url')).toThrow(
        expect.objectContaining({ code: 'DATABASE_URL_INVALID', message: expect.not.stringContaining('hunter2') }),
      );
    }
    expect(describeDatabase('postgres://u:hunter2@db.internal:6432/gateway?sslmode=require')).toBe('db.internal:6432/gateway');
  });
});
