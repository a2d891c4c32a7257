/**
 * The unit-of-work seam: several ports' writes that must commit together (a receipt and its outbox rows, a
 * checkpoint and its events) run inside one `run`, each port method given the same `tx`. Callers never see a
 * database connection: `tx` is opaque, and only the adapter that opened it can use it (an adapter given another
 * adapter's transaction throws). The SQLite adapter (./sqlite/) and the PostgreSQL adapter (./postgres/) implement it.
 */
export interface Transaction {
  /** Which adapter opened it (`sqlite`, `postgres`): a port's adapter checks it owns the transaction. */
  readonly adapter: string;
}

export interface UnitOfWork {
  /**
   * Runs `work` in one write transaction and commits when it resolves; rolls back and rethrows when it rejects.
   * On SQLite, units of work are serialised with each other within the process and, by the database's write lock,
   * across processes sharing the file. On PostgreSQL they run concurrently, each on its own connection: the row
   * and advisory locks a port's adapter takes inside the unit keep them apart, across replicas as within one.
   * `work` must not start another unit of work (on SQLite that would wait on itself).
   */
  run<T>(work: (tx: Transaction) => Promise<T>): Promise<T>;
  /**
   * Whether a `run` that rejected with `error` certainly wrote nothing and may pass when run again (a serialisation
   * failure, a deadlock, a connection cut before COMMIT: PostgreSQL). Absent: no error of the adapter is (SQLite
   * waits out a busy database inside `run`, up to its busy timeout).
   */
  isRetryable?(error: unknown): boolean;
}
