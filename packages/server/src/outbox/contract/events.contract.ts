import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OutboxStore } from '../ports.js';
import { appendReceipts, HOLDER_A, LEASE_MS, type OutboxStoreFactory, type OutboxStoreUnderTest } from './harness.js';

const AT = '2026-11-22T12:00:00.000Z';

/** The listing rules of the `OutboxStore` port (../ports.ts): what `gateway webhooks deliveries | list` read. */
export function outboxEventsContract(adapter: string, factory: OutboxStoreFactory): void {
  describe(`OutboxStore: listing events (${adapter})`, () => {
    let underTest: OutboxStoreUnderTest;
    let store: OutboxStore;
    beforeEach(async () => {
      underTest = await factory();
      store = underTest.store;
      await store.ensureEndpoints(['audit', 'other']);
      await appendReceipts(
        underTest,
        'audit',
        Array.from({ length: 6 }, (_, index) => `receipt-${index}`),
      );
      await appendReceipts(underTest, 'other', ['receipt-9']);
      // 1, 3, 5 delivered; 2 failed; 4 and 6 pending (4 with a failed attempt).
      await store.acquireLease('audit', HOLDER_A, Date.now(), LEASE_MS);
      await store.markDelivered(
        'audit',
        HOLDER_A,
        [1, 3, 5].map((sequence) => ({ sequence, status: 200, at: AT })),
      );
      await store.markAttemptFailed('audit', 2, HOLDER_A, { status: 500, error: 'HTTP 500', nextAttemptAt: null });
      await store.markAttemptFailed('audit', 4, HOLDER_A, { status: 429, error: 'HTTP 429', nextAttemptAt: Date.now() + 60_000 });
    });
    afterEach(() => underTest.close());

    const listed = async (options: Parameters<OutboxStore['events']>[1]) =>
      (await store.events('audit', options)).map((event) => [event.sequence, event.status]);

    it('events are listed lowest sequence first, from a sequence on, up to a limit, with their status', async () => {
      expect(await listed({ limit: 100 })).toEqual([
        [1, 'delivered'],
        [2, 'failed'],
        [3, 'delivered'],
        [4, 'pending'],
        [5, 'delivered'],
        [6, 'pending'],
      ]);
      expect(await listed({ fromSequence: 3, limit: 2 })).toEqual([
        [3, 'delivered'],
        [4, 'pending'],
      ]);
      expect(await listed({ fromSequence: 7, limit: 10 })).toEqual([]);
      expect((await store.events('other', { limit: 10 })).map((event) => [event.sequence, event.receiptId])).toEqual([[1, 'receipt-9']]);
      expect(await store.events('nowhere', { limit: 10 })).toEqual([]);
    });

    it('events are listed by status, each as its delivery left it', async () => {
      expect(await listed({ status: 'delivered', limit: 100 })).toEqual([
        [1, 'delivered'],
        [3, 'delivered'],
        [5, 'delivered'],
      ]);
      expect(await listed({ status: 'pending', fromSequence: 5, limit: 100 })).toEqual([[6, 'pending']]);
      const [failed] = await store.events('audit', { status: 'failed', limit: 100 });
      expect(failed).toMatchObject({ sequence: 2, attempts: 1, lastStatus: 500, lastError: 'HTTP 500', deliveredAt: null });
      const delivered = await store.events('audit', { status: 'delivered', limit: 100 });
      expect(delivered.every((event) => event.deliveredAt === AT && event.lastStatus === 200 && event.lastError === null)).toBe(true);
      const [retrying] = await store.events('audit', { fromSequence: 4, limit: 1 });
      expect(retrying).toMatchObject({ status: 'pending', attempts: 1, lastStatus: 429 });
      expect(retrying!.nextAttemptAt).toBeGreaterThan(Date.now());
    });

    it("an endpoint's state counts its events by status and names the sequence the next event gets", async () => {
      expect(await store.endpoint('audit')).toMatchObject({ nextSequence: 7, counts: { pending: 2, delivered: 3, failed: 1 } });
      expect(await store.endpoint('other')).toMatchObject({ nextSequence: 2, counts: { pending: 1, delivered: 0, failed: 0 } });
      // The pending ones, lowest first, whatever their retry time (the dispatcher waits for it).
      expect((await store.pending('audit', 10)).map((event) => event.sequence)).toEqual([4, 6]);
    });
  });
}
