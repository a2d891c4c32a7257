import { afterEach, describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import type { Transaction } from '../unit-of-work.js';
import { openPostgres, type PostgresPool } from './database.js';
import { PostgresUnitOfWork, postgresClientOf } from './unit-of-work.js';

const postgres = postgresForThisFile();
const pools: PostgresPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.end()));
});

/** A fresh database with one table of rows and a counter, and `count` pools on it (replicas). */
async function replicas(count: number): Promise<PostgresPool[]> {
  const url = await postgres.server.createDatabase();
  const opened = Array.from({ length: count }, () => openPostgres(url, { max: 4 }));
  pools.push(...opened);
  await opened[0]!.query(
    'CREATE TABLE rows (name TEXT PRIMARY KEY); CREATE TABLE counter (n INT NOT NULL); INSERT INTO counter VALUES (0)',
  );
  return opened;
}
const names = async (pool: PostgresPool) =>
  (await pool.query<{ name: string }>('SELECT name FROM rows ORDER BY name')).rows.map((row) => row.name);

describe('the PostgreSQL unit of work', () => {
  it("commits every port's writes together when the work resolves", async () => {
    const [pool] = await replicas(1);
    const unit = new PostgresUnitOfWork(pool!);
    const adapter = await unit.run(async (tx) => {
      await postgresClientOf(tx).query("INSERT INTO rows VALUES ('receipt-1')");
      // Not visible outside the unit before it commits.
      expect(await names(pool!)).toEqual([]);
      await postgresClientOf(tx).query("INSERT INTO rows VALUES ('outbox-1')");
      return tx.adapter;
    });
    expect(adapter).toBe('postgres');
    expect(await names(pool!)).toEqual(['outbox-1', 'receipt-1']);
  });

  it('rolls every write back and rethrows when the work rejects', async () => {
    const [pool] = await replicas(1);
    const unit = new PostgresUnitOfWork(pool!);
    await expect(
      unit.run(async (tx) => {
        await postgresClientOf(tx).query("INSERT INTO rows VALUES ('receipt-1')");
        throw new Error('the outbox refused');
      }),
    ).rejects.toThrow('the outbox refused');
    expect(await names(pool!)).toEqual([]);
  });

  it('given its pool, refuses a unit of work over another pool (another replica)', async () => {
    const [pool, other] = await replicas(2);
    await new PostgresUnitOfWork(other!).run(async (tx) => {
      expect(postgresClientOf(tx, other!)).toBeDefined();
      expect(() => postgresClientOf(tx, pool!)).toThrow(/another connection pool/);
    });
  });

  it("refuses another adapter's transaction and one whose unit has ended", async () => {
    const [pool] = await replicas(1);
    expect(() => postgresClientOf({ adapter: 'sqlite' })).toThrow(/'sqlite' adapter/);
    expect(() => postgresClientOf({ adapter: 'postgres' })).toThrow(/'postgres' adapter/);
    let kept: Transaction | undefined;
    await new PostgresUnitOfWork(pool!).run(async (tx) => {
      kept = tx;
    });
    expect(() => postgresClientOf(kept!)).toThrow(/already ended/);
  });

  it('units on several replicas that read then write a row under its lock lose no update', async () => {
    const units = (await replicas(2)).map((pool) => new PostgresUnitOfWork(pool));
    const increments = Array.from({ length: 20 }, (_, index) =>
      units[index % 2]!.run(async (tx) => {
        const client = postgresClientOf(tx);
        const { rows } = await client.query<{ n: number }>('SELECT n FROM counter FOR UPDATE');
        await new Promise((resolve) => setTimeout(resolve, 2));
        await client.query('UPDATE counter SET n = $1', [rows[0]!.n + 1]);
      }),
    );
    await Promise.all(increments);
    expect((await pools[0]!.query<{ n: number }>('SELECT n FROM counter')).rows[0]!.n).toBe(20);
  });
});
