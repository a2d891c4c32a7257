import type pg from 'pg';

/**
 * `work` on one client of the pool inside BEGIN … COMMIT; ROLLBACK and rethrow when it rejects. A client whose
 * ROLLBACK failed (its connection broke) is discarded, not returned to the pool. The one transaction runner of
 * every PostgreSQL adapter: the gateway's stores (server) and the `postgres` vault (here).
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    // No connection, so no transaction: nothing of the work was written.
    throw markNotCommitted(error);
  }
  let broken: Error | undefined;
  let isCommitSent = false;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    isCommitSent = true;
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    // Before COMMIT was sent, nothing of the transaction is written, whatever the error. A COMMIT the server answered
    // with an error (a SQLSTATE: a serialisation failure, a deferred check) rolled back too. A COMMIT whose
    // connection broke before an answer may or may not have committed: not marked.
    if (!isCommitSent || hasSqlState(error)) markNotCommitted(error);
    throw error;
  } finally {
    client!.release(broken);
  }
}

/** Errors of transactions known to have written nothing (rolled back, or never begun). */
const notCommitted = new WeakSet<object>();

function markNotCommitted(error: unknown): unknown {
  if (typeof error === 'object' && error !== null) notCommitted.add(error);
  return error;
}

/** An error the server sent (node-postgres's DatabaseError: a severity and a SQLSTATE), not one of the connection. */
function hasSqlState(error: unknown): boolean {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown };
  return typeof severity === 'string' && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

/**
 * Whether the transaction that failed with `error` (from `inTransaction`) certainly wrote nothing and failed for a
 * reason that may pass when the same work runs again: a serialisation failure or deadlock (SQLSTATE class 40), a
 * connection that failed or was cut (class 08, a server shutting down or starting: 57P01–57P03, too many
 * connections: 53300, or the driver's own connection errors). Such a transaction may be run again as a whole.
 */
export function isRetryableTransactionError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null || !notCommitted.has(error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (/^(40|08)/.test(code) || ['57P01', '57P02', '57P03', '53300'].includes(code)) return true;
    if (['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH'].includes(code)) return true;
  }
  // node-postgres's own words for a connection that ended or could not be made in time (no code).
  const message = (error as { message?: unknown }).message;
  return typeof message === 'string' && /^Connection terminated|^timeout exceeded when trying to connect/.test(message);
}
