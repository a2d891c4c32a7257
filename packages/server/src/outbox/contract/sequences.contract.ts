import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Transaction } from '../../store/unit-of-work.js';
import type { OutboxStore } from '../ports.js';
import { appendReceipts, receiptEvent, stream, type OutboxStoreFactory, type OutboxStoreUnderTest } from './harness.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The appending rules of the `OutboxStore` port (../ports.ts): sequences per endpoint, in units of work. */
export function outboxSequencesContract(adapter: string, factory: OutboxStoreFactory): void {
  describe(`OutboxStore: endpoints and sequences (${adapter})`, () => {
    let underTest: OutboxStoreUnderTest;
    let store: OutboxStore;
    beforeEach(async () => {
      underTest = await factory();
      store = underTest.store;
      await store.ensureEndpoints(['audit', 'denials']);
    });
    afterEach(() => underTest.close());

    it('an endpoint is made once, empty, without lease, pause or disable; an unknown one has no state', async () => {
      await store.ensureEndpoints(['audit', 'audit']);
      expect(await store.endpoint('audit')).toEqual({
        name: 'audit',
        nextSequence: 1,
        disabledAt: null,
        disabledReason: null,
        pausedAt: null,
        pausedReason: null,
        pausedSequence: null,
        leaseHolder: null,
        leaseExpiresAt: null,
        counts: { pending: 0, delivered: 0, failed: 0 },
      });
      expect(await store.endpoint('nowhere')).toBeUndefined();
    });

    it('events take gap-free sequences from 1 per endpoint, built with the sequence they get, stored as returned', async () => {
      const before = Date.now();
      const [first] = await appendReceipts(underTest, 'audit', ['receipt-0']);
      await appendReceipts(underTest, 'denials', ['receipt-1']);
      await appendReceipts(underTest, 'audit', ['receipt-1', 'receipt-2']);
      expect(first).toEqual({
        endpoint: 'audit',
        sequence: 1,
        eventId: 'evt_receipt-0_audit',
        receiptId: 'receipt-0',
        body: JSON.stringify({ receipt: 'receipt-0', sequence: 1 }),
        status: 'pending',
        attempts: 0,
        nextAttemptAt: 0,
        lastAttemptAt: null,
        lastStatus: null,
        lastError: null,
        createdAt: first!.createdAt,
        deliveredAt: null,
      });
      expect(Date.parse(first!.createdAt)).toBeGreaterThanOrEqual(before - 1000);
      expect((await store.events('audit', { limit: 10 }))[0]).toEqual(first);
      expect(await stream(store, 'audit')).toEqual([
        [1, 'receipt-0'],
        [2, 'receipt-1'],
        [3, 'receipt-2'],
      ]);
      expect(await stream(store, 'denials')).toEqual([[1, 'receipt-1']]);
      expect((await store.endpoint('audit'))!.nextSequence).toBe(4);
      expect((await store.endpoint('audit'))!.counts).toEqual({ pending: 3, delivered: 0, failed: 0 });
    });

    it('the events of one unit of work commit together, in the order they were appended', async () => {
      await underTest.unitOfWork.run(async (tx) => {
        await store.append(tx, 'audit', receiptEvent('audit', 'receipt-0'));
        await store.append(tx, 'denials', receiptEvent('denials', 'receipt-0'));
        await store.append(tx, 'audit', receiptEvent('audit', 'receipt-1'));
      });
      expect(await stream(store, 'audit')).toEqual([
        [1, 'receipt-0'],
        [2, 'receipt-1'],
      ]);
      expect(await stream(store, 'denials')).toEqual([[1, 'receipt-0']]);
    });

    it('a unit of work that rolls back takes its events and their sequences with it: no gap', async () => {
      await appendReceipts(underTest, 'audit', ['receipt-0']);
      await expect(
        underTest.unitOfWork.run(async (tx) => {
          await store.append(tx, 'audit', receiptEvent('audit', 'receipt-1'));
          await store.append(tx, 'audit', receiptEvent('audit', 'receipt-2'));
          throw new Error('the receipt could not be stored');
        }),
      ).rejects.toThrow('the receipt could not be stored');
      expect(await stream(store, 'audit')).toEqual([[1, 'receipt-0']]);
      await appendReceipts(underTest, 'audit', ['receipt-3']);
      expect(await stream(store, 'audit')).toEqual([
        [1, 'receipt-0'],
        [2, 'receipt-3'],
      ]);
    });

    it('units of work running at once get sequences in the order they commit, without a gap', async () => {
      const committed: string[] = [];
      // Each holds its transaction open for a while after appending; the first started waits longest.
      const runs = [40, 25, 10, 0].map((holdMs, index) =>
        underTest.unitOfWork
          .run(async (tx) => {
            await store.append(tx, 'audit', receiptEvent('audit', `receipt-${index}`));
            await pause(holdMs);
          })
          .then(() => committed.push(`receipt-${index}`)),
      );
      await Promise.all(runs);
      expect(await stream(store, 'audit')).toEqual(committed.map((receipt, index) => [index + 1, receipt]));
    });

    it('an append to an endpoint without its row is refused, and its unit of work stores nothing', async () => {
      await expect(
        underTest.unitOfWork.run(async (tx) => {
          await store.append(tx, 'audit', receiptEvent('audit', 'receipt-0'));
          await store.append(tx, 'nowhere', receiptEvent('nowhere', 'receipt-0'));
        }),
      ).rejects.toThrow();
      expect(await stream(store, 'audit')).toEqual([]);
    });

    it('an append is refused a transaction another adapter opened, or one whose unit of work is over', async () => {
      const foreign: Transaction = { adapter: 'not-this-adapter' };
      await expect(
        underTest.unitOfWork.run(async () => {
          await store.append(foreign, 'audit', receiptEvent('audit', 'receipt-0'));
        }),
      ).rejects.toThrow();
      let finished: Transaction | undefined;
      await underTest.unitOfWork.run(async (tx) => {
        finished = tx;
      });
      await expect((async () => store.append(finished!, 'audit', receiptEvent('audit', 'receipt-1')))()).rejects.toThrow();
      expect(await stream(store, 'audit')).toEqual([]);
    });
  });
}
