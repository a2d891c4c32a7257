import type { EphemeralState } from '../ephemeral-state.js';

/** Entries past this many (of all kinds) make a write sweep the expired ones first. */
const SWEEP_AT = 1024;

/**
 * The ephemeral state port (../ephemeral-state.ts) in this process's memory: what a single gateway process uses
 * (nothing is written to disk; a restart forgets it). Its users bound what they put (browser sessions and pending
 * authorizations evict, spent nonces expire); expired entries are swept as writes pass twice the last live count.
 */
export class MemoryEphemeralState implements EphemeralState {
  readonly isShared = false;
  private readonly entries = new Map<string, { value: string; expiresAt: number }>();
  private sweepAt = SWEEP_AT;

  async put(kind: string, key: string, value: string, expiresAt: number): Promise<void> {
    this.store(kind, key, value, expiresAt);
  }

  async get(kind: string, key: string, now = Date.now()): Promise<string | undefined> {
    return this.live(kind, key, now)?.value;
  }

  async take(kind: string, key: string, now = Date.now()): Promise<string | undefined> {
    const entry = this.live(kind, key, now);
    this.entries.delete(name(kind, key));
    return entry?.value;
  }

  async delete(kind: string, key: string): Promise<void> {
    this.entries.delete(name(kind, key));
  }

  async claimOnce(kind: string, key: string, expiresAt: number, now = Date.now()): Promise<boolean> {
    if (this.live(kind, key, now)) return false;
    this.store(kind, key, '', expiresAt);
    return true;
  }

  async purge(now = Date.now()): Promise<void> {
    this.sweep(now);
  }

  private sweep(now: number): void {
    for (const [entryName, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(entryName);
  }

  private live(kind: string, key: string, now: number): { value: string; expiresAt: number } | undefined {
    const entry = this.entries.get(name(kind, key));
    if (!entry) return undefined;
    if (entry.expiresAt > now) return entry;
    this.entries.delete(name(kind, key));
    return undefined;
  }

  private store(kind: string, key: string, value: string, expiresAt: number): void {
    if (this.entries.size >= this.sweepAt) {
      this.sweep(Date.now());
      this.sweepAt = Math.max(SWEEP_AT, this.entries.size * 2);
    }
    this.entries.set(name(kind, key), { value, expiresAt });
  }
}

function name(kind: string, key: string): string {
  return `${kind}\u0000${key}`;
}
