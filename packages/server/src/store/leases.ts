import type { Transaction } from './unit-of-work.js';

/**
 * Named leases: at most one holder of a name at a time, until an expiry the holder keeps pushing forward. What one
 * process of several must do alone (the drift leader, the checkpoint signer through ./lease-keeper.ts; next the
 * webhook dispatcher) runs only while its process holds the lease. Each new holder gets a fencing token greater
 * than every earlier one, so a write that carries the token can be refused once a later holder exists (`isHeld`).
 * Each operation is one atomic method: an adapter runs it in one transaction (SQLite in ./sqlite/leases.ts);
 * ./contract/leases.contract.ts states the rules. Times are epoch milliseconds of the caller's clock.
 */
export interface Lease {
  name: string;
  holder: string;
  /** Increases with each new holder of the name (never reused, never decreasing, released or not). */
  token: number;
  expiresAt: number;
}

export interface Leases {
  /**
   * Takes `name` for `holder` until `now + durationMs` when nobody holds it, its holder released it or let it
   * expire (a new token), or `holder` holds it already (the same token, the expiry extended). Undefined while another
   * holder holds it.
   */
  take(name: string, holder: string, durationMs: number, now?: number): Promise<Lease | undefined>;
  /**
   * Extends the lease to `now + durationMs` while `holder` still holds it under `token` (even past its expiry, as
   * long as nobody took it since). Undefined when it was lost: taken by another holder, or released.
   */
  renew(name: string, holder: string, token: number, durationMs: number, now?: number): Promise<Lease | undefined>;
  /** Gives the lease up, so another holder may take it at once. False when `holder` did not hold it under `token`. */
  release(name: string, holder: string, token: number): Promise<boolean>;
  /** Who holds `name` now; undefined when nobody does (never taken, released or expired). */
  holder(name: string, now?: number): Promise<Lease | undefined>;
  /**
   * The fence of a write: whether `holder` still holds `name` under `token`, read in the unit of work `tx` that
   * writes what only the holder may write (true past the expiry too, as long as nobody took it since, as `renew`).
   * Nothing that would make it false commits before `tx` ends: on PostgreSQL the lease's row stays locked
   * (`FOR SHARE`) until then; on SQLite the unit of work holds the database's write lock.
   */
  isHeld(tx: Transaction, name: string, holder: string, token: number): Promise<boolean>;
}
