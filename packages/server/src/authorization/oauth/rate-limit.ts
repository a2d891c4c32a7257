import { createHash } from 'node:crypto';
import type { SqliteDatabase } from '../../store/sqlite/database.js';
import { SharedEphemeralStore } from '../../store/shared-state.js';

/**
 * The gateway's throttles: a token bucket per key (`RateLimiter`, for /authorize) and failed attempts at a
 * secret per key (`AttemptThrottle`: sign-in passwords, the admin token). Both keep their per-key state in a `ThrottleStore`: this
 * process's memory, or, for `gateway serve --workers N`, the database the workers share (`SharedThrottleStore`),
 * so N workers allow what one process allows, not N times as much.
 */

/** One key's state: a count (tokens, failures) and the time it refers to (ms since the epoch). */
export interface ThrottleEntry {
  count: number;
  at: number;
  /** Attempts started and not yet finished (the sign-in throttle). */
  pending?: number;
}

/** The entries of one store, as seen inside `ThrottleStore.atomically`. Expired entries are never returned. */
export interface ThrottleEntries {
  get(key: string): ThrottleEntry | undefined;
  /** Kept until `expiresAt` (ms since the epoch): past it the entry carries no information. */
  set(key: string, entry: ThrottleEntry, expiresAt: number): void;
  delete(key: string): void;
}

export interface ThrottleStore {
  /** Runs `work` with no other change to the store in between (across workers: one write transaction). */
  atomically<R>(now: number, work: (entries: ThrottleEntries) => R): R;
}

/** A throttle store in this process's memory, bounded in keys (a flood of new keys forgets old ones first). */
export class MemoryThrottleStore implements ThrottleStore {
  private readonly entries = new Map<string, { entry: ThrottleEntry; expiresAt: number }>();

  constructor(private readonly maxKeys = 100_000) {}

  atomically<R>(now: number, work: (entries: ThrottleEntries) => R): R {
    const { entries } = this;
    return work({
      get(key) {
        const stored = entries.get(key);
        if (!stored) return undefined;
        if (stored.expiresAt <= now) {
          entries.delete(key);
          return undefined;
        }
        return { ...stored.entry };
      },
      set: (key, entry, expiresAt) => {
        if (!entries.has(key) && entries.size >= this.maxKeys) this.forget(now);
        entries.set(key, { entry: { ...entry }, expiresAt });
      },
      delete(key) {
        entries.delete(key);
      },
    });
  }

  /** Expired keys go; if none has, the oldest half (insertion order) goes. */
  private forget(now: number): void {
    for (const [key, stored] of this.entries) if (stored.expiresAt <= now) this.entries.delete(key);
    if (this.entries.size < this.maxKeys) return;
    let excess = Math.ceil(this.entries.size / 2);
    for (const key of this.entries.keys()) {
      if (excess-- <= 0) break;
      this.entries.delete(key);
    }
  }
}

/**
 * The throttles' state shared by the workers through `shared_ephemeral`, one kind per throttle. Keys
 * (account names, client addresses) are stored as their SHA-256, and every change runs in one write
 * transaction (`BEGIN IMMEDIATE`), so attempts counted by different workers at once add up instead of
 * overwriting each other.
 */
export class SharedThrottleStore implements ThrottleStore {
  private readonly rows: SharedEphemeralStore;

  constructor(database: SqliteDatabase, kind: string) {
    this.rows = new SharedEphemeralStore(database, `throttle:${kind}`);
  }

  atomically<R>(now: number, work: (entries: ThrottleEntries) => R): R {
    const { rows } = this;
    const name = (key: string) => createHash('sha256').update(key).digest('base64url');
    const entries: ThrottleEntries = {
      get(key) {
        const value = rows.get(name(key), now);
        return value === undefined ? undefined : (JSON.parse(value) as ThrottleEntry);
      },
      set(key, entry, expiresAt) {
        rows.put(name(key), JSON.stringify({ count: entry.count, at: entry.at, pending: entry.pending ?? 0 }), expiresAt);
      },
      delete(key) {
        rows.delete(name(key));
      },
    };
    return rows.atomically(() => work(entries));
  }
}

/** A token bucket per key (a client address, a client id): `perMinute` actions at once, refilled evenly over a minute. */
export class RateLimiter {
  private readonly perMillisecond: number;

  constructor(
    private readonly perMinute: number,
    private readonly store: ThrottleStore = new MemoryThrottleStore(),
  ) {
    this.perMillisecond = perMinute / 60_000;
  }

  /** 0 when the key may act now (and the action is counted), else the whole seconds until it may. */
  take(key: string, now = Date.now()): number {
    const { perMinute, perMillisecond } = this;
    return this.store.atomically(now, (entries) => {
      const bucket = entries.get(key);
      const tokens = bucket ? Math.min(perMinute, bucket.count + (now - bucket.at) * perMillisecond) : perMinute;
      const left = tokens >= 1 ? tokens - 1 : tokens;
      // A bucket that has refilled carries no information: it is kept only until then.
      entries.set(key, { count: left, at: now }, now + Math.ceil((perMinute - left) / perMillisecond));
      return tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - tokens) / perMillisecond / 1000));
    });
  }
}

/**
 * Attempts at a secret (a password at sign-in, the admin API's token) per key (an account name, a client
 * address): once a key has its limit of failed attempts within the lockout window, further attempts are refused
 * until the window passes (OWASP authentication cheat sheet). Sign-in gives an address a higher limit than a
 * name, so one office behind a NAT is not locked out by one person's typos while guessing across many names
 * stays bounded.
 *
 * An attempt holds a place from its start (`attempt`) until its password has been checked: failures plus
 * attempts still being checked never exceed the limit, so guesses sent in parallel (to one process or to several
 * workers) get no more checks than guesses sent one by one. A wrong password turns its place into a failure
 * (`failed`); a right one gives the place back and clears the account's failures (`succeeded`), so successful
 * sign-ins never use up an address's allowance, and cannot be used to win back failed ones either.
 */
export class AttemptThrottle {
  private readonly windowMs: number;

  constructor(
    private readonly maxFailures: number,
    windowSeconds: number,
    private readonly store: ThrottleStore = new MemoryThrottleStore(),
  ) {
    this.windowMs = windowSeconds * 1000;
  }

  /**
   * Seconds until another attempt may start for any of the keys (nothing held), or 0: the attempt may go on
   * and holds a place under every key until `failed` or `succeeded`. `limits` overrides maxFailures per key.
   */
  attempt(keys: readonly string[], now = Date.now(), limits: Record<string, number> = {}): number {
    return this.store.atomically(now, (entries) => {
      let wait = 0;
      for (const key of keys) {
        const entry = entries.get(key);
        if (!entry) continue;
        const limit = limits[key] ?? this.maxFailures;
        if (entry.count >= limit) wait = Math.max(wait, Math.ceil((entry.at + this.windowMs - now) / 1000));
        // Full only with attempts still being checked: they end within a second or two.
        else if (entry.count + (entry.pending ?? 0) >= limit) wait = Math.max(wait, 1);
      }
      if (wait > 0) return wait;
      for (const key of keys) {
        const entry = entries.get(key) ?? { count: 0, at: now };
        this.keep(entries, key, { ...entry, pending: (entry.pending ?? 0) + 1 });
      }
      return 0;
    });
  }

  /** The attempt's password was wrong: its place under each key becomes a failure. */
  failed(keys: readonly string[], now = Date.now()): void {
    this.store.atomically(now, (entries) => {
      for (const key of keys) {
        const entry = entries.get(key) ?? { count: 0, at: now };
        // The window runs from the first failure.
        this.keep(entries, key, { count: entry.count + 1, at: entry.count === 0 ? now : entry.at, pending: release(entry) });
      }
    });
  }

  /**
   * The attempt ended without a failure (a right password, or no check at all): it gives its place under each
   * key back, and the `clear` keys (the account that signed in) forget their failures.
   */
  succeeded(keys: readonly string[], { clear = [] }: { clear?: readonly string[] } = {}, now = Date.now()): void {
    this.store.atomically(now, (entries) => {
      for (const key of keys) {
        const entry = entries.get(key);
        if (!entry) continue;
        // Other attempts still being checked keep their places.
        const count = clear.includes(key) ? 0 : entry.count;
        this.keep(entries, key, { count, at: entry.at, pending: release(entry) });
      }
    });
  }

  /** Stores an entry until its window ends, or forgets it when it holds nothing. */
  private keep(entries: ThrottleEntries, key: string, entry: ThrottleEntry): void {
    if (entry.count === 0 && !entry.pending) entries.delete(key);
    else entries.set(key, entry, entry.at + this.windowMs);
  }
}

function release(entry: ThrottleEntry): number {
  return Math.max(0, (entry.pending ?? 0) - 1);
}
