import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChangeFeed, ChangePayloads } from '../changes.js';
import type { UnitOfWork } from '../unit-of-work.js';

/**
 * What the change feed suite runs against: two feeds on one fresh database (two processes or replicas), a unit of
 * work of the first feed's adapter over the same database, and how to dispose of them.
 */
export interface ChangeFeedsUnderTest {
  first: ChangeFeed;
  second: ChangeFeed;
  unitOfWork: UnitOfWork;
  /** Opens one more feed on the same database (closed by `close`). */
  openFeed(): Promise<ChangeFeed>;
  close(): Promise<void>;
}

export type ChangeFeedsFactory = () => Promise<ChangeFeedsUnderTest>;

/** The bound the issue sets: a change reaches every process within a second. */
export const CHANGE_DELIVERY_BOUND_MS = 1_000;

/** Resolves once `condition` holds, or rejects after `timeoutMs` (polled every 10 ms). */
export async function eventually(condition: () => boolean, timeoutMs = CHANGE_DELIVERY_BOUND_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const quiet = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The rules of the `ChangeFeed` port (../changes.ts), for any adapter. */
export function changeFeedContract(adapter: string, factory: ChangeFeedsFactory): void {
  describe(`ChangeFeed (${adapter})`, () => {
    let underTest: ChangeFeedsUnderTest;
    beforeEach(async () => {
      underTest = await factory();
    });
    afterEach(() => underTest.close());

    it('a change published through one feed reaches the subscribers of every feed, its own included, within a second', async () => {
      const heard: Array<[string, ChangePayloads['session-ended']]> = [];
      underTest.first.subscribe('session-ended', (payload) => heard.push(['first', payload]));
      underTest.second.subscribe('session-ended', (payload) => heard.push(['second', payload]));
      const startedAt = Date.now();
      await underTest.first.publish('session-ended', { sessionId: 'session-7' });
      await eventually(() => heard.length === 2);
      expect(Date.now() - startedAt).toBeLessThan(CHANGE_DELIVERY_BOUND_MS);
      expect(heard.sort()).toEqual([
        ['first', { sessionId: 'session-7' }],
        ['second', { sessionId: 'session-7' }],
      ]);
    });

    it('each change is delivered once to each subscriber, in the order one publisher published them; topics stay apart', async () => {
      const drift: string[] = [];
      const endpoints: Array<ChangePayloads['webhook-endpoint']> = [];
      underTest.second.subscribe('drift-blocks', (payload) => drift.push(payload.source));
      underTest.second.subscribe('webhook-endpoint', (payload) => endpoints.push(payload));
      for (const source of ['a', 'b', 'c']) await underTest.first.publish('drift-blocks', { source });
      await underTest.first.publish('webhook-endpoint', { endpoint: 'audit', state: 'paused' });
      await eventually(() => drift.length === 3 && endpoints.length === 1);
      await quiet(300);
      expect(drift).toEqual(['a', 'b', 'c']);
      expect(endpoints).toEqual([{ endpoint: 'audit', state: 'paused' }]);
    });

    it('a change published in a unit of work is announced when it commits and never when it rolls back', async () => {
      const heard: string[] = [];
      underTest.second.subscribe('publication-changed', (payload) => heard.push(payload.digest));
      await expect(
        underTest.unitOfWork.run(async (tx) => {
          await underTest.first.publish('publication-changed', { digest: 'rolled-back' }, tx);
          throw new Error('the unit fails');
        }),
      ).rejects.toThrow('the unit fails');
      await underTest.unitOfWork.run(async (tx) => {
        await underTest.first.publish('publication-changed', { digest: 'committed' }, tx);
      });
      await eventually(() => heard.length === 1);
      await quiet(300);
      expect(heard).toEqual(['committed']);
    });

    it('an unsubscribed handler hears nothing more, and a throwing handler stops no other', async () => {
      const heard: string[] = [];
      const stop = underTest.second.subscribe('drift-blocks', (payload) => heard.push(`stopped ${payload.source}`));
      underTest.second.subscribe('drift-blocks', () => {
        throw new Error('a faulty handler');
      });
      underTest.second.subscribe('drift-blocks', (payload) => heard.push(payload.source));
      stop();
      await underTest.first.publish('drift-blocks', { source: 'orders' });
      await eventually(() => heard.length === 1);
      expect(heard).toEqual(['orders']);
    });

    it('a feed delivers nothing published before it opened, and nothing once closed', async () => {
      await underTest.first.publish('session-ended', { sessionId: 'before' });
      await quiet(300);
      const late = await underTest.openFeed();
      const heard: string[] = [];
      late.subscribe('session-ended', (payload) => heard.push(payload.sessionId));
      underTest.second.subscribe('session-ended', (payload) => heard.push(`second ${payload.sessionId}`));
      await underTest.second.close();
      await underTest.first.publish('session-ended', { sessionId: 'after' });
      await eventually(() => heard.includes('after'));
      await quiet(300);
      expect(heard).toEqual(['after']);
    });
  });
}
