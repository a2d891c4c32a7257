import { describe, expect, it } from 'vitest';
import { twoConnectionsEachTest } from '../../../test/support/databases.js';
import { ephemeralStateMigrations } from '../../store/sqlite/ephemeral-state.js';
import type { Throttles } from '../stores/ports.js';
import { MemoryThrottles } from '../stores/memory/throttles.js';
import { SqliteThrottles } from '../stores/sqlite/throttles.js';
import { AttemptThrottle, RateLimiter } from './rate-limit.js';

/** Two "workers": two connections to one database file. */
const workers = twoConnectionsEachTest('gateway-throttle-', ephemeralStateMigrations);

const T0 = Date.UTC(2026, 10, 23, 9, 0, 0);

/** The same behaviour from each adapter: one process's memory, and the database (one connection). */
const stores: Array<[string, () => Throttles]> = [
  ['memory', () => new MemoryThrottles()],
  ['database', () => new SqliteThrottles(workers.first)],
];

/** `count` calls one after another (each waits for the one before), their results in order. */
async function inTurn<T>(count: number, call: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let index = 0; index < count; index += 1) results.push(await call(index));
  return results;
}

describe.each(stores)('throttles over the %s store', (_name, makeStore) => {
  it('a bucket of 3 per minute allows 3 at once, then one every 20 s, and says how long to wait', async () => {
    const limiter = new RateLimiter('test', 3, makeStore());
    expect(await inTurn(3, () => limiter.take('203.0.113.7', T0))).toEqual([0, 0, 0]);
    expect(await limiter.take('203.0.113.7', T0)).toBe(20);
    expect(await limiter.take('203.0.113.7', T0 + 10_000)).toBe(10);
    expect(await limiter.take('198.51.100.1', T0 + 10_000)).toBe(0);
    expect(await limiter.take('203.0.113.7', T0 + 20_000)).toBe(0);
    expect(await limiter.take('203.0.113.7', T0 + 20_000)).toBeGreaterThan(0);
    // Refilled after a minute: 3 at once again.
    expect(await inTurn(3, () => limiter.take('203.0.113.7', T0 + 90_000))).toEqual([0, 0, 0]);
    expect(await limiter.take('203.0.113.7', T0 + 90_000)).toBeGreaterThan(0);
  });

  it('sign-in: failures one by one reach the limit; then attempts are refused until the window from the first failure ends', async () => {
    const throttle = new AttemptThrottle('test', 3, 600, makeStore());
    const keys = ['name:alice', 'address:203.0.113.7'];
    for (let index = 0; index < 3; index += 1) {
      expect(await throttle.attempt(keys, T0 + index * 1000)).toBe(0);
      await throttle.failed(keys, T0 + index * 1000);
    }
    expect(await throttle.attempt(keys, T0 + 3_000)).toBe(597);
    // Refused attempts are not counted: the window still ends 600 s after the first failure.
    expect(await throttle.attempt(keys, T0 + 599_000)).toBe(1);
    expect(await throttle.attempt(keys, T0 + 600_000)).toBe(0);
  });

  it('sign-in: attempts still being checked hold their places, so parallel guesses get no more checks than the limit', async () => {
    const throttle = new AttemptThrottle('test', 3, 600, makeStore());
    const keys = ['name:alice', 'address:203.0.113.7'];
    // Five guesses arrive before any is checked: three go on, two are told to retry in a second.
    const started = await Promise.all([0, 1, 2, 3, 4].map(() => throttle.attempt(keys, T0)));
    expect(started).toEqual([0, 0, 0, 1, 1]);
    for (let index = 0; index < 3; index += 1) await throttle.failed(keys, T0 + 500);
    // Now they are failures: the account is locked for the window.
    expect(await throttle.attempt(keys, T0 + 1_000)).toBe(600);
  });

  it('sign-in: a success clears the account but keeps the places of other attempts still being checked', async () => {
    const throttle = new AttemptThrottle('test', 3, 600, makeStore());
    const keys = ['name:alice'];
    expect(await inTurn(3, () => throttle.attempt(keys, T0))).toEqual([0, 0, 0]);
    await throttle.succeeded(keys, { clear: keys }, T0);
    // Two are still being checked: one more may start, not three.
    expect(await inTurn(2, () => throttle.attempt(keys, T0))).toEqual([0, 1]);
  });

  it('sign-in: an address has its own, higher limit; successes use none of it and win none of it back', async () => {
    const throttle = new AttemptThrottle('test', 2, 600, makeStore());
    const address = 'address:203.0.113.7';
    const limits = { [address]: 4 };
    const fail = async (name: string) => {
      expect(await throttle.attempt([name, address], T0, limits)).toBe(0);
      await throttle.failed([name, address], T0);
    };
    const succeed = async (name: string) => {
      expect(await throttle.attempt([name, address], T0, limits)).toBe(0);
      await throttle.succeeded([name, address], { clear: [name] }, T0);
    };
    // Many people sign in from one office address: none of it counts.
    for (let index = 0; index < 20; index += 1) await succeed(`name:person-${index}`);
    // Two failures for bob, then bob signs in: his count is cleared, the address keeps both failures.
    await fail('name:bob');
    await fail('name:bob');
    expect(await throttle.attempt(['name:bob', address], T0, limits)).toBeGreaterThan(0);
    await fail('name:carol');
    await succeed('name:dave');
    await fail('name:erin');
    // Four failures from the address: every account is refused from it now, even one that would succeed.
    expect(await throttle.attempt(['name:dave', address], T0, limits)).toBeGreaterThan(0);
  });
});

describe('throttles shared by workers', () => {
  it('failures counted by two workers add up to one limit, and the database holds no name or address in the clear', async () => {
    const inFirst = new AttemptThrottle('signin', 5, 600, new SqliteThrottles(workers.first));
    const inSecond = new AttemptThrottle('signin', 5, 600, new SqliteThrottles(workers.second));
    const keys = ['name:alice', 'address:203.0.113.7'];
    const results = await inTurn(8, async (index) => {
      const worker = index % 2 === 0 ? inFirst : inSecond;
      const wait = await worker.attempt(keys, T0);
      if (wait === 0) await worker.failed(keys, T0);
      return wait;
    });
    expect(results.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    expect(results.slice(5).every((wait) => wait === 600)).toBe(true);
    // Places held in one worker count in the other: attempts still being checked fill the limit too.
    const parallel = new AttemptThrottle('signin', 2, 600, new SqliteThrottles(workers.first));
    const parallelElsewhere = new AttemptThrottle('signin', 2, 600, new SqliteThrottles(workers.second));
    expect(await inTurn(3, (index) => [parallel, parallelElsewhere, parallel][index]!.attempt(['name:bob'], T0))).toEqual([0, 0, 1]);

    const rows = workers.first.prepare("SELECT kind, key, value FROM shared_ephemeral WHERE kind LIKE 'throttle:%'").all() as Array<
      Record<string, string>
    >;
    // Three keys: alice's name, the address, bob's name.
    expect(rows.map((row) => row.kind)).toEqual(['throttle:signin', 'throttle:signin', 'throttle:signin']);
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain('alice');
    expect(stored).not.toContain('203.0.113.7');

    // A success in one worker is seen by the other.
    await inSecond.succeeded(['name:alice'], { clear: ['name:alice'] }, T0);
    expect(await inFirst.attempt(['name:alice'], T0)).toBe(0);
  });

  it('one bucket across workers: the per-minute allowance is shared, not multiplied', async () => {
    const inFirst = new RateLimiter('authorize-address', 4, new SqliteThrottles(workers.first));
    const inSecond = new RateLimiter('authorize-address', 4, new SqliteThrottles(workers.second));
    const waits = await inTurn(8, (index) => (index % 2 === 0 ? inFirst : inSecond).take('203.0.113.7', T0));
    expect(waits.filter((wait) => wait === 0)).toHaveLength(4);
    expect(waits.slice(4).every((wait) => wait > 0)).toBe(true);
  });

  it('the memory store stays within its number of keys under a flood of new ones', async () => {
    const store = new MemoryThrottles(100);
    const limiter = new RateLimiter('test', 10, store);
    for (let index = 0; index < 1_000; index += 1) await limiter.take(`198.51.100.${index}`, T0);
    const keys = Array.from({ length: 1_000 }, (_, index) => `198.51.100.${index}`);
    const held = await store.update('test', keys, T0, (entries) => keys.map((key) => entries.get(key)).filter(Boolean));
    expect(held.length).toBeGreaterThan(0);
    expect(held.length).toBeLessThanOrEqual(100);
  });
});
