import type pg from 'pg';

/**
 * `work` on one client of the pool inside BEGIN … COMMIT; ROLLBACK and rethrow when it rejects. A client whose
 * ROLLBACK failed (its connection broke) is discarded, not returned to the pool. The one transaction runner of
 * every PostgreSQL adapter: the gateway's stores (server) and the `postgres` vault (here).
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw error;
  } finally {
    client.release(broken);
  }
}
