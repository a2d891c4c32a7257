import { describe, expect, it } from 'vitest';
import { twoConnectionsEachTest } from '../../../test/support/databases.js';
import { sharedStateMigrations } from '../../store/shared-state.js';
import { MemoryThrottleStore, RateLimiter, SharedThrottleStore, AttemptThrottle, type ThrottleStore } from './rate-limit.js';

/** Two "workers": two connections to one database file. */
const workers = twoConnectionsEachTest('gateway-throttle-', sharedStateMigrations);

const T0 = Date.UTC(2026, 10, 23, 9, 0, 0);

/** The same behaviour from each store: one process's memory, and the database (one connection). */
const stores: Array<[string, () => ThrottleStore]> = [
  ['memory', () => new MemoryThrottleStore()],
  ['database', () => new SharedThrottleStore(workers.first, 'test')],
];

describe.each(stores)('throttles over the %s store', (_name, makeStore) => {
  it('a bucket of 3 per minute allows 3 at once, then one every 20 s, and says how long to wait', () => {
    const limiter = new RateLimiter(3, makeStore());
    expect([0, 1, 2].map(() => limiter.take('203.0.113.7', T0))).toEqual([0, 0, 0]);
    expect(limiter.take('203.0.113.7', T0)).toBe(20);
    expect(limiter.take('203.0.113.7', T0 + 10_000)).toBe(10);
    expect(limiter.take('198.51.100.1', T0 + 10_000)).toBe(0);
    expect(limiter.take('203.0.113.7', T0 + 20_000)).toBe(0);
    expect(limiter.take('203.0.113.7', T0 + 20_000)).toBeGreaterThan(0);
    // Refilled after a minute: 3 at once again.
    expect([0, 1, 2].map(() => limiter.take('203.0.113.7', T0 + 90_000))).toEqual([0, 0, 0]);
    expect(limiter.take('203.0.113.7', T0 + 90_000)).toBeGreaterThan(0);
  });

  it('sign-in: failures one by one reach the limit; then attempts are refused until the window from the first failure ends', () => {
    const throttle = new AttemptThrottle(3, 600, makeStore());
    const keys = ['name:alice', 'address:203.0.113.7'];
    for (let index = 0; index < 3; index += 1) {
      expect(throttle.attempt(keys, T0 + index * 1000)).toBe(0);
      throttle.failed(keys, T0 + index * 1000);
    }
    expect(throttle.attempt(keys, T0 + 3_000)).toBe(597);
    // Refused attempts are not counted: the window still ends 600 s after the first failure.
    expect(throttle.attempt(keys, T0 + 599_000)).toBe(1);
    expect(throttle.attempt(keys, T0 + 600_000)).toBe(0);
  });

  it('sign-in: attempts still being checked hold their places, so parallel guesses get no more checks than the limit', () => {
    const throttle = new AttemptThrottle(3, 600, makeStore());
    const keys = ['name:alice', 'address:203.0.113.7'];
    // Five guesses arrive before any is checked: three go on, two are told to retry in a second.
    const started = [0, 1, 2, 3, 4].map(() => throttle.attempt(keys, T0));
    expect(started).toEqual([0, 0, 0, 1, 1]);
    for (let index = 0; index < 3; index += 1) throttle.failed(keys, T0 + 500);
    // Now they are failures: the account is locked for the window.
    expect(throttle.attempt(keys, T0 + 1_000)).toBe(600);
  });

  it('sign-in: a success clears the account but keeps the places of other attempts still being checked', () => {
    const throttle = new AttemptThrottle(3, 600, makeStore());
    const keys = ['name:alice'];
    expect([0, 1, 2].map(() => throttle.attempt(keys, T0))).toEqual([0, 0, 0]);
    throttle.succeeded(keys, { clear: keys }, T0);
    // Two are still being checked: one more may start, not three.
    expect([0, 1].map(() => throttle.attempt(keys, T0))).toEqual([0, 1]);
  });

  it('sign-in: an address has its own, higher limit; successes use none of it and win none of it back', () => {
    const throttle = new AttemptThrottle(2, 600, makeStore());
    const address = 'address:203.0.113.7';
    const limits = { [address]: 4 };
    const fail = (name: string) => {
      expect(throttle.attempt([name, address], T0, limits)).toBe(0);
      throttle.failed([name, address], T0);
    };
    const succeed = (name: string) => {
      expect(throttle.attempt([name, address], T0, limits)).toBe(0);
      throttle.succeeded([name, address], { clear: [name] }, T0);
    };
    // Many people sign in from one office address: none of it counts.
    for (let index = 0; index < 20; index += 1) succeed(`name:person-${index}`);
    // Two failures for bob, then bob signs in: his count is cleared, the address keeps both failures.
    fail('name:bob');
    fail('name:bob');
    expect(throttle.attempt(['name:bob', address], T0, limits)).toBeGreaterThan(0);
    fail('name:carol');
    succeed('name:dave');
    fail('name:erin');
    // Four failures from the address: every account is refused from it now, even one that would succeed.
    expect(throttle.attempt(['name:dave', address], T0, limits)).toBeGreaterThan(0);
  });
});

describe('throttles shared by workers', () => {
  it('failures counted by two workers add up to one limit, and the database holds no name or address in the clear', () => {
    const inFirst = new AttemptThrottle(5, 600, new SharedThrottleStore(workers.first, 'signin'));
    const inSecond = new AttemptThrottle(5, 600, new SharedThrottleStore(workers.second, 'signin'));
    const keys = ['name:alice', 'address:203.0.113.7'];
    const results = Array.from({ length: 8 }, (_, index) => {
      const worker = index % 2 === 0 ? inFirst : inSecond;
      const wait = worker.attempt(keys, T0);
      if (wait === 0) worker.failed(keys, T0);
      return wait;
    });
    expect(results.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    expect(results.slice(5).every((wait) => wait === 600)).toBe(true);
    // Places held in one worker count in the other: attempts still being checked fill the limit too.
    const parallel = new AttemptThrottle(2, 600, new SharedThrottleStore(workers.first, 'signin'));
    const parallelElsewhere = new AttemptThrottle(2, 600, new SharedThrottleStore(workers.second, 'signin'));
    expect([parallel, parallelElsewhere, parallel].map((worker) => worker.attempt(['name:bob'], T0))).toEqual([0, 0, 1]);

    const rows = workers.first.prepare("SELECT kind, key, value FROM shared_ephemeral WHERE kind LIKE 'throttle:%'").all() as Array<
      Record<string, string>
    >;
    // Three keys: alice's name, the address, bob's name.
    expect(rows.map((row) => row.kind)).toEqual(['throttle:signin', 'throttle:signin', 'throttle:signin']);
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain('alice');
    expect(stored).not.toContain('203.0.113.7');

    // A success in one worker is seen by the other.
    inSecond.succeeded(['name:alice'], { clear: ['name:alice'] }, T0);
    expect(inFirst.attempt(['name:alice'], T0)).toBe(0);
  });

  it('one bucket across workers: the per-minute allowance is shared, not multiplied', () => {
    const inFirst = new RateLimiter(4, new SharedThrottleStore(workers.first, 'authorize-address'));
    const inSecond = new RateLimiter(4, new SharedThrottleStore(workers.second, 'authorize-address'));
    const waits = Array.from({ length: 8 }, (_, index) => (index % 2 === 0 ? inFirst : inSecond).take('203.0.113.7', T0));
    expect(waits.filter((wait) => wait === 0)).toHaveLength(4);
    expect(waits.slice(4).every((wait) => wait > 0)).toBe(true);
  });

  it('the memory store stays within its number of keys under a flood of new ones', () => {
    const store = new MemoryThrottleStore(100);
    const limiter = new RateLimiter(10, store);
    for (let index = 0; index < 1_000; index += 1) limiter.take(`198.51.100.${index}`, T0);
    const held = store.atomically(T0, (entries) =>
      Array.from({ length: 1_000 }, (_, index) => entries.get(`198.51.100.${index}`)).filter(Boolean),
    );
    expect(held.length).toBeGreaterThan(0);
    expect(held.length).toBeLessThanOrEqual(100);
  });
});
