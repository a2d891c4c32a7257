import type { ThrottleEntries, ThrottleEntry, Throttles } from '../stores/ports.js';
import { MemoryThrottles } from '../stores/memory/throttles.js';

/**
 * The gateway's throttles: a token bucket per key (`RateLimiter`, for /authorize) and failed attempts at a
 * secret per key (`AttemptThrottle`: sign-in passwords, the admin token). Both keep their per-key counts in the
 * throttles port (../stores/ports.ts) under a kind of their own: this process's memory, or, for `gateway serve
 * --workers N`, the database the workers share, so N workers allow what one process allows, not N times as much.
 * Each check-and-count is one `Throttles.update`: the policy is here, the adapter makes the step atomic.
 */

/** A token bucket per key (a client address, a client id): `perMinute` actions at once, refilled evenly over a minute. */
export class RateLimiter {
  private readonly perMillisecond: number;

  constructor(
    /** Names this limiter's counts in the store (`authorize-address`). */
    private readonly kind: string,
    private readonly perMinute: number,
    private readonly throttles: Throttles = new MemoryThrottles(),
  ) {
    this.perMillisecond = perMinute / 60_000;
  }

  /** 0 when the key may act now (and the action is counted), else the whole seconds until it may. */
  take(key: string, now = Date.now()): Promise<number> {
    const { perMinute, perMillisecond } = this;
    return this.throttles.update(this.kind, [key], now, (entries) => {
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
    /** Names this throttle's counts in the store (`signin`, `admin-token`). */
    private readonly kind: string,
    private readonly maxFailures: number,
    windowSeconds: number,
    private readonly throttles: Throttles = new MemoryThrottles(),
  ) {
    this.windowMs = windowSeconds * 1000;
  }

  /**
   * Seconds until another attempt may start for any of the keys (nothing held), or 0: the attempt may go on
   * and holds a place under every key until `failed` or `succeeded`. `limits` overrides maxFailures per key.
   */
  attempt(keys: readonly string[], now = Date.now(), limits: Record<string, number> = {}): Promise<number> {
    return this.throttles.update(this.kind, keys, now, (entries) => {
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
  async failed(keys: readonly string[], now = Date.now()): Promise<void> {
    await this.throttles.update(this.kind, keys, now, (entries) => {
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
  async succeeded(keys: readonly string[], { clear = [] }: { clear?: readonly string[] } = {}, now = Date.now()): Promise<void> {
    await this.throttles.update(this.kind, keys, now, (entries) => {
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
