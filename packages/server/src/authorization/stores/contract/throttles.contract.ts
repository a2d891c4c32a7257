import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ThrottleEntry, Throttles } from '../ports.js';

/**
 * What the suite runs against: two handles on one fresh, empty backing store (two connections to one database,
 * as two workers hold them; an in-memory adapter, shared by one process, passes the same object twice).
 */
export interface ThrottlesUnderTest {
  first: Throttles;
  second: Throttles;
  close(): Promise<void>;
}

export type ThrottlesFactory = () => Promise<ThrottlesUnderTest>;

/** The rules of the `Throttles` port (../ports.ts), for any adapter. */
export function throttlesContract(adapter: string, factory: ThrottlesFactory): void {
  describe(`Throttles (${adapter})`, () => {
    let underTest: ThrottlesUnderTest;
    let first: Throttles;
    let second: Throttles;
    beforeEach(async () => {
      underTest = await factory();
      ({ first, second } = underTest);
    });
    afterEach(() => underTest.close());

    const now = 1_800_000_000_000;
    const read = (throttles: Throttles, kind: string, key: string, at = now) =>
      throttles.update(kind, [key], at, (entries) => entries.get(key));

    it('an entry set in one update is read by the next, through either handle, until it expires', async () => {
      const entry: ThrottleEntry = { count: 2, at: now, pending: 1 };
      await first.update('signin', ['alice'], now, (entries) => entries.set('alice', entry, now + 1000));
      expect(await read(second, 'signin', 'alice')).toEqual(entry);
      expect(await read(second, 'signin', 'alice', now + 999)).toEqual(entry);
      expect(await read(first, 'signin', 'alice', now + 1000)).toBeUndefined();
      expect(await read(first, 'signin', 'bob')).toBeUndefined();
    });

    it('kinds keep separate counts for the same key', async () => {
      await first.update('signin', ['127.0.0.1'], now, (entries) => entries.set('127.0.0.1', { count: 1, at: now }, now + 1000));
      expect(await read(second, 'authorize-address', '127.0.0.1')).toBeUndefined();
    });

    it('an update returns what its decision returns, and a deleted entry is gone', async () => {
      await first.update('signin', ['alice'], now, (entries) => entries.set('alice', { count: 1, at: now }, now + 1000));
      const result = await second.update('signin', ['alice', 'bob'], now, (entries) => {
        const seen = [entries.get('alice')?.count, entries.get('bob')?.count];
        entries.delete('alice');
        return seen;
      });
      expect(result).toEqual([1, undefined]);
      expect(await read(first, 'signin', 'alice')).toBeUndefined();
    });

    it('a decision sees its own changes within the update', async () => {
      const seen = await first.update('signin', ['alice'], now, (entries) => {
        entries.set('alice', { count: 3, at: now }, now + 1000);
        return entries.get('alice')?.count;
      });
      expect(seen).toBe(3);
      expect((await read(second, 'signin', 'alice'))?.count).toBe(3);
    });

    it('a decision that throws changes nothing', async () => {
      await first.update('signin', ['alice'], now, (entries) => entries.set('alice', { count: 1, at: now }, now + 1000));
      await expect(
        second.update('signin', ['alice'], now, (entries) => {
          entries.set('alice', { count: 9, at: now }, now + 1000);
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      expect((await read(first, 'signin', 'alice'))?.count).toBe(1);
    });

    it('a decision can reach only the keys its update named', async () => {
      await expect(first.update('signin', ['alice'], now, (entries) => entries.get('bob'))).rejects.toThrow(/not named/);
    });

    it('concurrent check-and-count updates from both handles add up: none overwrites another', async () => {
      const increment = (throttles: Throttles) =>
        throttles.update('signin', ['alice'], now, (entries) => {
          const count = (entries.get('alice')?.count ?? 0) + 1;
          entries.set('alice', { count, at: now }, now + 60_000);
          return count;
        });
      const counts = await Promise.all(Array.from({ length: 10 }, (_, index) => increment(index % 2 === 0 ? first : second)));
      expect([...counts].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect((await read(first, 'signin', 'alice'))?.count).toBe(10);
    });
  });
}
