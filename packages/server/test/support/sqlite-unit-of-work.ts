import type { SqliteDatabase } from '../../src/store/sqlite/database.js';
import type { Transaction, UnitOfWork } from '../../src/store/unit-of-work.js';

/**
 * A minimal SQLite unit of work for tests of ports that take a transaction: one `BEGIN IMMEDIATE … COMMIT` per
 * run on the connection, runs queued one after another in this process (a run's awaits may take several turns of
 * the event loop; nothing else of the test writes meanwhile), each run with a transaction object of its own.
 */
export function sqliteUnitOfWork(database: SqliteDatabase): UnitOfWork {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    run<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
      const next = queue.then(async () => {
        database.exec('BEGIN IMMEDIATE');
        const tx: Transaction = { adapter: 'sqlite' };
        try {
          const result = await work(tx);
          database.exec('COMMIT');
          return result;
        } catch (error) {
          if (database.inTransaction) database.exec('ROLLBACK');
          throw error;
        }
      });
      queue = next.catch(() => undefined);
      return next;
    },
  };
}
