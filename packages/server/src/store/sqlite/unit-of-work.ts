import { runAloneInBackground } from '../../scheduling/background-lane.js';
import type { SqliteDatabase } from './database.js';

/**
 * The SQLite adapter's transaction: what the `sqlite/` adapters of the areas downcast `tx` to. The port's types
 * (../unit-of-work.ts: `Transaction`, `UnitOfWork`) are met structurally, not imported: `store/` imports this
 * folder, which imports nothing back.
 */
export interface SqliteTransaction {
  readonly adapter: 'sqlite';
  /** Runs once the transaction has committed (never after a rollback), before the next unit of work begins. */
  afterCommit(callback: () => void): void;
}

/** Per connection: every unit of work over one connection waits for the one before it. */
const queues = new WeakMap<SqliteDatabase, { tail: Promise<unknown>; waiting: number; open: OpenTransaction | undefined }>();

class OpenTransaction implements SqliteTransaction {
  readonly adapter = 'sqlite' as const;
  readonly committed: Array<() => void> = [];
  isOpen = true;
  constructor(readonly database: SqliteDatabase) {}
  afterCommit(callback: () => void): void {
    this.committed.push(callback);
  }
}

/**
 * `tx` as the SQLite transaction open on `database`: a port's SQLite adapter calls this before it writes. Throws
 * when `tx` was opened by another adapter, over another connection, or has ended (committed or rolled back).
 */
export function sqliteTransactionOf(tx: { readonly adapter: string }, database: SqliteDatabase): SqliteTransaction {
  if (!(tx instanceof OpenTransaction) || tx.database !== database) {
    throw new Error(`a ${tx.adapter} transaction was given to a SQLite adapter of another connection`);
  }
  if (!tx.isOpen) throw new Error('the unit of work of this transaction has ended');
  return tx;
}

/** Whether a unit of work holds a transaction open on `database` now (tests, assertions). */
export function isUnitOfWorkOpen(database: SqliteDatabase): boolean {
  return queues.get(database)?.open !== undefined;
}

/**
 * The unit of work over one SQLite connection (../unit-of-work.ts).
 *
 * Serialised: units of work on the connection run one at a time, in the order they were asked for (a promise
 * queue per connection, shared by every unit of work built over it); other processes (`serve --workers`) wait
 * for the write lock, which `BEGIN IMMEDIATE` takes when the transaction begins, up to the busy timeout (then
 * SQLITE_BUSY, answered 503 DATABASE_BUSY as every write transaction's, database.ts).
 *
 * Nothing slips in: the connection is shared with the other areas, whose writes are not in a unit of work, so the
 * transaction must be open only while no other JavaScript can run. It begins at the start of an event-loop
 * callback, alone in a turn of the background lane (`runAloneInBackground`: nothing else is queued then, neither
 * callbacks nor microtasks, and the lane runs nothing after it in that callback), and the
 * SQLite adapters given `tx` run their statements synchronously when called, so `work` settles on microtasks
 * that it created itself, and the transaction commits before any other callback (a request, a timer, an
 * acknowledgement) runs. A `work` that waits for the event loop (I/O, a timer, an immediate) would let such a
 * callback write inside the transaction: the unit of work notices (a sentinel callback queued at the beginning
 * ran first), rolls back, and rejects. Settling `work`'s callers' promises (a receipt's waiter) happens after
 * the commit, never inside `work`.
 */
/** The unit of work over one SQLite connection: ../unit-of-work.ts's `UnitOfWork`. */
export interface SqliteUnitOfWork {
  run<T>(work: (tx: SqliteTransaction) => Promise<T>): Promise<T>;
}

export function createSqliteUnitOfWork(database: SqliteDatabase): SqliteUnitOfWork {
  let queue = queues.get(database);
  if (!queue) {
    queue = { tail: Promise.resolve(), waiting: 0, open: undefined };
    queues.set(database, queue);
  }
  const state = queue;
  const begin = database.prepare('BEGIN IMMEDIATE');
  const commit = database.prepare('COMMIT');
  const rollback = database.prepare('ROLLBACK');
  const rollbackIfOpen = () => {
    if (database.inTransaction) rollback.run();
  };

  function runAlone<T>(work: (tx: SqliteTransaction) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      runAloneInBackground(() => {
        try {
          begin.run();
        } catch (error) {
          reject(error);
          return;
        }
        const tx = new OpenTransaction(database);
        state.open = tx;
        let hasYielded = false;
        const yielded = () => {
          hasYielded = true;
        };
        const sentinels = { immediate: setImmediate(yielded), timer: setTimeout(yielded, 0) };
        const end = () => {
          clearImmediate(sentinels.immediate);
          clearTimeout(sentinels.timer);
          tx.isOpen = false;
          state.open = undefined;
        };
        let settled: Promise<T>;
        try {
          settled = work(tx);
        } catch (error) {
          settled = Promise.reject(error);
        }
        settled.then(
          (value) => {
            end();
            try {
              if (hasYielded)
                throw new Error('a SQLite unit of work waited for the event loop: rolled back (see store/sqlite/unit-of-work.ts)');
              commit.run();
            } catch (error) {
              rollbackIfOpen();
              reject(error);
              return;
            }
            for (const callback of tx.committed) callback();
            resolve(value);
          },
          (error: unknown) => {
            end();
            rollbackIfOpen();
            reject(error);
          },
        );
      });
    });
  }

  return {
    run<T>(work: (tx: SqliteTransaction) => Promise<T>): Promise<T> {
      // Idle: queued in the lane now, in the order of the caller's other lane tasks; otherwise behind the others.
      const result = state.waiting === 0 ? runAlone(work) : state.tail.then(() => runAlone(work));
      state.waiting += 1;
      const done = () => {
        state.waiting -= 1;
      };
      state.tail = result.then(done, done);
      return result;
    },
  };
}
