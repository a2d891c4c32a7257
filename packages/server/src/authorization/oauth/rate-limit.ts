import { createHash } from 'node:crypto';
import type { SqliteDatabase } from '../../store/database.js';
import { SharedEphemeralStore } from '../../store/shared-state.js';

/**
 * The authorization server's throttles: a token bucket per key (`RateLimiter`, for /authorize) and failed
 * sign-in attempts per key (`SignInThrottle`). Both keep their per-key state in a `ThrottleStore`: this
 * process's memory, or, for `gateway serve --workers N`, the database the workers share (`SharedThrottleStore`),
 * so N workers allow what one process allows, not N times as much.
 */

/** One key's state: a count (tokens, failures) and the time it refers to (ms since the epoch). */
export interface ThrottleEntry {
  count: number;
  at: number;
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
        rows.put(name(key), JSON.stringify({ count: entry.count, at: entry.at }), expiresAt);
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
 * Password attempts per key (an account name, a client address): once a key has its limit of failed
 * attempts within the lockout window, further attempts are refused until the window passes (OWASP
 * authentication cheat sheet). Callers give an address a higher limit than a name, so one office behind a NAT
 * is not locked out by one person's typos while guessing across many names stays bounded.
 *
 * An attempt is counted when it starts (`attempt`), before the password is checked, so attempts sent in
 * parallel (to one process or to several workers) cannot all pass the check before any failure is recorded.
 * A successful attempt is taken back (`succeeded`): the account's count is cleared, the address's attempt
 * returned.
 */
export class SignInThrottle {
  constructor(
    private readonly maxFailures: number,
    private readonly windowSeconds: number,
    private readonly store: ThrottleStore = new MemoryThrottleStore(),
  ) {}

  /**
   * Seconds until another attempt is allowed for any of the keys (nothing counted), or 0: the attempt is
   * allowed and counted against every key. `limits` overrides maxFailures per key.
   */
  attempt(keys: readonly string[], now = Date.now(), limits: Record<string, number> = {}): number {
    const windowMs = this.windowSeconds * 1000;
    return this.store.atomically(now, (entries) => {
      let wait = 0;
      for (const key of keys) {
        const entry = entries.get(key);
        if (entry && entry.count >= (limits[key] ?? this.maxFailures)) {
          wait = Math.max(wait, Math.ceil((entry.at + windowMs - now) / 1000));
        }
      }
      if (wait > 0) return wait;
      for (const key of keys) {
        const entry = entries.get(key);
        const next = entry ? { count: entry.count + 1, at: entry.at } : { count: 1, at: now };
        entries.set(key, next, next.at + windowMs);
      }
      return 0;
    });
  }

  /** The attempt succeeded: `clear` keys forget their failures, `refund` keys get this attempt back. */
  succeeded({ clear, refund }: { clear: readonly string[]; refund: readonly string[] }, now = Date.now()): void {
    const windowMs = this.windowSeconds * 1000;
    this.store.atomically(now, (entries) => {
      for (const key of clear) entries.delete(key);
      for (const key of refund) {
        const entry = entries.get(key);
        if (!entry) continue;
        if (entry.count <= 1) entries.delete(key);
        else entries.set(key, { count: entry.count - 1, at: entry.at }, entry.at + windowMs);
      }
    });
  }
}
