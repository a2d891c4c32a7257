/**
 * Short-lived state by kind and key, until an expiry: the sign-in and consent pages' browser sessions and pending
 * authorizations, and the spent nonces of retries' `requestState`s. One process keeps it in memory (./memory/);
 * the workers of `gateway serve --workers N` share it through the database (./sqlite/), because a browser's next
 * page, or a client's retry, may reach another worker. ./contract/ holds the suite every adapter passes.
 *
 * Single use is ONE method (`take`, `claimOnce`), so an adapter runs it as one atomic step: of two concurrent
 * takes of one key (a consent form submitted twice, in two workers) exactly one gets the value.
 */
export interface EphemeralState {
  /**
   * True when the entries are written where other processes, and a copy of the database, see them: a value that
   * could act as a credential is then sealed by its user (./sealed.ts), never stored readable.
   */
  readonly isShared: boolean;
  /** Stores `value` under (`kind`, `key`) until `expiresAt` (epoch ms), replacing what was there. */
  put(kind: string, key: string, value: string, expiresAt: number): Promise<void>;
  /** The value, unless missing or expired (`expiresAt <= now`). */
  get(kind: string, key: string, now?: number): Promise<string | undefined>;
  /** Removes the entry and returns its value if it had not expired: of concurrent takes, exactly one gets it. */
  take(kind: string, key: string, now?: number): Promise<string | undefined>;
  /** Removes the entry, if any. */
  delete(kind: string, key: string): Promise<void>;
  /**
   * Records (`kind`, `key`) until `expiresAt` unless an unexpired entry is there already: true for the first
   * claim (of concurrent ones, exactly one), false for every later one until the entry expires.
   */
  claimOnce(kind: string, key: string, expiresAt: number, now?: number): Promise<boolean>;
  /** Deletes expired entries (adapters also purge now and then on their own). */
  purge(now?: number): Promise<void>;
}
