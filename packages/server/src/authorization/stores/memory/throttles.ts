import type { ThrottleEntries, ThrottleEntry, Throttles } from '../ports.js';
import { namedEntries } from '../throttle-entries.js';

/**
 * The throttles port (../ports.ts) in this process's memory (a single gateway process), bounded in keys: a flood
 * of new keys forgets expired keys first, then the oldest half. An update runs to its end before any other starts
 * (nothing in it awaits), which makes it atomic here; an expired entry stays until `forget` sweeps it.
 */
export class MemoryThrottles implements Throttles {
  private readonly entries = new Map<string, { entry: ThrottleEntry; expiresAt: number }>();

  constructor(private readonly maxKeys = 100_000) {}

  async update<R>(kind: string, keys: readonly string[], now: number, decide: (entries: ThrottleEntries) => R): Promise<R> {
    const name = (key: string) => `${kind}\u0000${key}`;
    // Changes are staged and applied once `decide` returns: one that throws changes nothing.
    const staged = new Map<string, { entry: ThrottleEntry; expiresAt: number } | undefined>();
    const result = decide(
      namedEntries(keys, {
        get: (key) => {
          const stored = staged.has(name(key)) ? staged.get(name(key)) : this.entries.get(name(key));
          return stored && stored.expiresAt > now ? { ...stored.entry } : undefined;
        },
        set(key, entry, expiresAt) {
          staged.set(name(key), { entry: { ...entry }, expiresAt });
        },
        delete(key) {
          staged.set(name(key), undefined);
        },
      }),
    );
    for (const [key, stored] of staged) {
      if (!stored) this.entries.delete(key);
      else {
        if (!this.entries.has(key) && this.entries.size >= this.maxKeys) this.forget(now);
        this.entries.set(key, stored);
      }
    }
    return result;
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
