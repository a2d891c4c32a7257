import { GatewayError } from '@gateway/core';
import type { Transaction, UnitOfWork } from '../unit-of-work.js';
import { isRetryableTransactionError } from '@gateway/runtime';
import { inTransaction, type PostgresClient, type PostgresPool } from './database.js';

/**
 * The unit-of-work port (../unit-of-work.ts) on PostgreSQL: each unit takes one client from the pool and runs
 * inside BEGIN … COMMIT on it (ROLLBACK when the work rejects). Units run concurrently, each on its own
 * connection, in every replica alike: what keeps two of them apart is the row locks (`FOR UPDATE`) and advisory
 * locks the ports' PostgreSQL adapters take inside them, which hold across replicas as within one.
 *
 * The `tx` handed to the work is opaque: a port's PostgreSQL adapter gets the client back with
 * `postgresClientOf(tx)`, which refuses another adapter's transaction and one whose unit has ended.
 */
const clients = new WeakMap<Transaction, { client: PostgresClient; pool: PostgresPool; isOpen: boolean }>();

export class PostgresUnitOfWork implements UnitOfWork {
  constructor(private readonly pool: PostgresPool) {}

  run<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, async (client) => {
      const tx: Transaction = Object.freeze({ adapter: 'postgres' });
      const entry = { client, pool: this.pool, isOpen: true };
      clients.set(tx, entry);
      try {
        return await work(tx);
      } finally {
        entry.isOpen = false;
      }
    });
  }

  isRetryable(error: unknown): boolean {
    return isRetryableTransactionError(error);
  }
}

/**
 * The client of an open PostgreSQL unit of work: what a port's adapter queries inside it. Given `pool` (the
 * adapter's own), a unit of work over another pool (another database, or another replica's connections) is
 * refused too, rather than writing into a transaction the adapter does not own.
 */
export function postgresClientOf(tx: Transaction, pool?: PostgresPool): PostgresClient {
  const entry = clients.get(tx);
  if (tx.adapter !== 'postgres' || !entry) {
    throw new GatewayError('INTERNAL_ERROR', `a PostgreSQL store was given a transaction of the '${tx.adapter}' adapter`);
  }
  if (pool !== undefined && entry.pool !== pool) {
    throw new GatewayError('INTERNAL_ERROR', 'a PostgreSQL store was given a transaction of another connection pool');
  }
  if (!entry.isOpen) throw new GatewayError('INTERNAL_ERROR', 'a PostgreSQL store was given a unit of work that has already ended');
  return entry.client;
}
