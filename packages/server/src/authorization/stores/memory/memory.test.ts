import { describe, expect, it } from 'vitest';
import { throttlesContract } from '../contract/throttles.contract.js';
import { MemoryThrottles } from './throttles.js';

/** One process: both "handles" are the one in-memory store. */
throttlesContract('memory', async () => {
  const throttles = new MemoryThrottles();
  return { first: throttles, second: throttles, close: async () => undefined };
});

describe('the in-memory throttles', () => {
  it('forget old keys first when a flood of new keys fills them', async () => {
    const throttles = new MemoryThrottles(100);
    const count = (key: string) => throttles.update('test', [key], 0, (entries) => entries.get(key)?.count);
    const add = (key: string) => throttles.update('test', [key], 0, (entries) => entries.set(key, { count: 1, at: 0 }, 60_000));
    await add('the-first');
    for (let index = 0; index < 150; index += 1) await add(`flood-${index}`);
    expect(await count('the-first')).toBeUndefined();
    expect(await count('flood-149')).toBe(1);
  });
});
