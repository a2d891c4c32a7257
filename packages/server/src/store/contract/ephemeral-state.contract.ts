import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EphemeralState } from '../ephemeral-state.js';

/**
 * What the suite runs against: two handles on one fresh, empty backing store (two connections to one database,
 * as two workers hold them; an in-memory adapter, shared by one process, passes the same object twice).
 */
export interface EphemeralStateUnderTest {
  first: EphemeralState;
  second: EphemeralState;
  close(): Promise<void>;
}

export type EphemeralStateFactory = () => Promise<EphemeralStateUnderTest>;

/** The rules of the `EphemeralState` port (../ephemeral-state.ts), for any adapter. */
export function ephemeralStateContract(adapter: string, factory: EphemeralStateFactory): void {
  describe(`EphemeralState (${adapter})`, () => {
    let underTest: EphemeralStateUnderTest;
    let first: EphemeralState;
    let second: EphemeralState;
    beforeEach(async () => {
      underTest = await factory();
      ({ first, second } = underTest);
    });
    afterEach(() => underTest.close());

    const now = 1_800_000_000_000;

    it('a value put through one handle is read through the other until it expires, by kind and key', async () => {
      await first.put('page', 'key-1', 'value-1', now + 1000);
      expect(await second.get('page', 'key-1', now)).toBe('value-1');
      expect(await second.get('page', 'key-1', now + 999)).toBe('value-1');
      expect(await second.get('page', 'key-1', now + 1000)).toBeUndefined();
      expect(await second.get('other', 'key-1', now)).toBeUndefined();
      expect(await second.get('page', 'key-2', now)).toBeUndefined();
    });

    it('putting again replaces the value and the expiry', async () => {
      await first.put('page', 'key-1', 'old', now + 1000);
      await second.put('page', 'key-1', 'new', now + 5000);
      expect(await first.get('page', 'key-1', now + 2000)).toBe('new');
    });

    it('a deleted entry is gone for both handles', async () => {
      await first.put('page', 'key-1', 'value-1', now + 1000);
      await second.delete('page', 'key-1');
      expect(await first.get('page', 'key-1', now)).toBeUndefined();
      await first.delete('page', 'never-put');
    });

    it('take returns the value once: a second take, from either handle, gets nothing', async () => {
      await first.put('pending', 'id-1', 'request', now + 1000);
      expect(await second.take('pending', 'id-1', now)).toBe('request');
      expect(await first.take('pending', 'id-1', now)).toBeUndefined();
      expect(await second.take('pending', 'id-1', now)).toBeUndefined();
      expect(await first.get('pending', 'id-1', now)).toBeUndefined();
    });

    it('of concurrent takes of one key exactly one gets the value', async () => {
      await first.put('pending', 'id-1', 'request', now + 1000);
      const taken = await Promise.all(
        Array.from({ length: 6 }, (_, index) => (index % 2 === 0 ? first : second).take('pending', 'id-1', now)),
      );
      expect(taken.filter((value) => value === 'request')).toHaveLength(1);
    });

    it('an expired entry cannot be taken', async () => {
      await first.put('pending', 'id-1', 'request', now + 1000);
      expect(await second.take('pending', 'id-1', now + 1000)).toBeUndefined();
    });

    it('claimOnce is true for the first claim only, across handles, until the claim expires', async () => {
      expect(await first.claimOnce('nonce', 'n-1', now + 1000, now)).toBe(true);
      expect(await second.claimOnce('nonce', 'n-1', now + 1000, now + 10)).toBe(false);
      expect(await first.claimOnce('nonce', 'n-1', now + 1000, now + 999)).toBe(false);
      expect(await first.claimOnce('nonce', 'n-2', now + 1000, now)).toBe(true);
      expect(await first.claimOnce('other-kind', 'n-1', now + 1000, now)).toBe(true);
      // Past its expiry the old claim carries no information: the key may be claimed anew.
      expect(await second.claimOnce('nonce', 'n-1', now + 5000, now + 1000)).toBe(true);
      expect(await first.claimOnce('nonce', 'n-1', now + 5000, now + 2000)).toBe(false);
    });

    it('of concurrent claims of one key exactly one wins', async () => {
      const claims = await Promise.all(
        Array.from({ length: 6 }, (_, index) => (index % 2 === 0 ? first : second).claimOnce('nonce', 'n-1', now + 1000, now)),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
    });

    it('purging deletes expired entries only', async () => {
      await first.put('page', 'short', 'a', now + 1000);
      await first.put('page', 'long', 'b', now + 5000);
      await second.purge(now + 1000);
      // Read as of before the expiry: only a purged entry is missing then.
      expect(await first.get('page', 'short', now)).toBeUndefined();
      expect(await first.get('page', 'long', now)).toBe('b');
    });
  });
}
