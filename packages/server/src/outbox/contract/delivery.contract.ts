import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OutboxStore } from '../ports.js';
import { appendReceipts, HOLDER_A, HOLDER_B, LEASE_MS, type OutboxStoreFactory, type OutboxStoreUnderTest } from './harness.js';

const AT = '2026-11-22T12:00:00.000Z';
const NOW = Date.parse('2026-11-22T12:00:00Z');

/** The delivery rules of the `OutboxStore` port (../ports.ts): leases, marks by the holder, pause, resume, replay. */
export function outboxDeliveryContract(adapter: string, factory: OutboxStoreFactory): void {
  describe(`OutboxStore: leases and delivery marks (${adapter})`, () => {
    let underTest: OutboxStoreUnderTest;
    let store: OutboxStore;
    beforeEach(async () => {
      underTest = await factory();
      store = underTest.store;
      await store.ensureEndpoints(['audit']);
      await appendReceipts(underTest, 'audit', ['receipt-0', 'receipt-1', 'receipt-2', 'receipt-3']);
    });
    afterEach(() => underTest.close());

    const sequences = async (status?: 'pending' | 'delivered' | 'failed') =>
      (await store.events('audit', { limit: 100, ...(status ? { status } : {}) })).map((event) => event.sequence);

    it('a lease is held by one holder at a time, until it expires or its holder releases it', async () => {
      expect(await store.acquireLease('audit', HOLDER_A, NOW, LEASE_MS)).toBe(true);
      expect(await store.acquireLease('audit', HOLDER_B, NOW + 1, LEASE_MS)).toBe(false);
      // Renewed by its holder: it lasts from the renewal on.
      expect(await store.acquireLease('audit', HOLDER_A, NOW + 5, LEASE_MS)).toBe(true);
      expect(await store.endpoint('audit')).toMatchObject({ leaseHolder: HOLDER_A, leaseExpiresAt: NOW + 5 + LEASE_MS });
      expect(await store.acquireLease('audit', HOLDER_B, NOW + LEASE_MS + 1, LEASE_MS)).toBe(false);
      // Expired: another takes it, and the first is out.
      expect(await store.acquireLease('audit', HOLDER_B, NOW + 5 + LEASE_MS, LEASE_MS)).toBe(true);
      expect(await store.acquireLease('audit', HOLDER_A, NOW + 6 + LEASE_MS, LEASE_MS)).toBe(false);
      // Only the holder's release counts.
      await store.releaseLease('audit', HOLDER_A);
      expect((await store.endpoint('audit'))!.leaseHolder).toBe(HOLDER_B);
      await store.releaseLease('audit', HOLDER_B);
      expect(await store.endpoint('audit')).toMatchObject({ leaseHolder: null, leaseExpiresAt: null });
      expect(await store.acquireLease('audit', HOLDER_A, NOW + 7 + LEASE_MS, LEASE_MS)).toBe(true);
      expect(await store.acquireLease('nowhere', HOLDER_A, NOW, LEASE_MS)).toBe(false);
    });

    it('only the lease holder marks events delivered, each once; pending lists what is left, lowest first', async () => {
      expect(await store.acquireLease('audit', HOLDER_A, NOW, LEASE_MS)).toBe(true);
      expect(await store.markDelivered('audit', HOLDER_B, [{ sequence: 1, status: 200, at: AT }])).toBe(0);
      expect(await sequences('pending')).toEqual([1, 2, 3, 4]);
      const marked = await store.markDelivered('audit', HOLDER_A, [
        { sequence: 1, status: 200, at: AT },
        { sequence: 2, status: 204, at: AT },
      ]);
      expect(marked).toBe(2);
      expect(await store.markDelivered('audit', HOLDER_A, [{ sequence: 1, status: 200, at: AT }])).toBe(0);
      expect(await store.markDelivered('audit', HOLDER_A, [])).toBe(0);
      const [first, second] = await store.events('audit', { limit: 2 });
      expect(first).toMatchObject({
        status: 'delivered',
        attempts: 1,
        lastStatus: 200,
        lastAttemptAt: AT,
        deliveredAt: AT,
        lastError: null,
      });
      expect(second).toMatchObject({ status: 'delivered', lastStatus: 204 });
      expect((await store.pending('audit', 10)).map((event) => event.sequence)).toEqual([3, 4]);
      expect((await store.pending('audit', 1)).map((event) => event.sequence)).toEqual([3]);
      expect((await store.endpoint('audit'))!.counts).toEqual({ pending: 2, delivered: 2, failed: 0 });
      // A holder whose lease another took marks nothing.
      expect(await store.acquireLease('audit', HOLDER_B, NOW + LEASE_MS, LEASE_MS)).toBe(true);
      expect(await store.markDelivered('audit', HOLDER_A, [{ sequence: 3, status: 200, at: AT }])).toBe(0);
      expect(await sequences('pending')).toEqual([3, 4]);
    });

    it('only the lease holder records a failed attempt: with a retry time the event stays pending, without it fails', async () => {
      await store.acquireLease('audit', HOLDER_A, NOW, LEASE_MS);
      const retryAt = NOW + 5_000;
      await store.markAttemptFailed('audit', 1, HOLDER_B, { status: 503, error: 'HTTP 503', nextAttemptAt: retryAt });
      expect((await store.events('audit', { limit: 1 }))[0]).toMatchObject({ attempts: 0, lastStatus: null, nextAttemptAt: 0 });
      await store.markAttemptFailed('audit', 1, HOLDER_A, { status: 503, error: 'HTTP 503', nextAttemptAt: retryAt });
      const [retried] = await store.events('audit', { limit: 1 });
      expect(retried).toMatchObject({ status: 'pending', attempts: 1, lastStatus: 503, lastError: 'HTTP 503', nextAttemptAt: retryAt });
      expect(retried!.lastAttemptAt).not.toBeNull();
      expect((await store.pending('audit', 1))[0]).toMatchObject({ sequence: 1, attempts: 1 });
      await store.markAttemptFailed('audit', 1, HOLDER_A, { status: null, error: 'timed out', nextAttemptAt: null });
      expect((await store.events('audit', { limit: 1 }))[0]).toMatchObject({ status: 'failed', attempts: 2, lastError: 'timed out' });
      expect(await sequences('pending')).toEqual([2, 3, 4]);
      expect(await sequences('failed')).toEqual([1]);
      expect((await store.endpoint('audit'))!.counts).toEqual({ pending: 3, delivered: 0, failed: 1 });
    });

    it('a pause takes the lease holder: it records the last attempt, stops the endpoint there and frees the lease', async () => {
      await store.acquireLease('audit', HOLDER_A, NOW, LEASE_MS);
      const outcome = { status: 503, error: 'HTTP 503', reason: 'evt_receipt-0_audit failed 8 attempts' };
      expect(await store.pause('audit', 1, HOLDER_B, outcome)).toBe(false);
      expect((await store.endpoint('audit'))!.pausedAt).toBeNull();
      expect(await store.pause('audit', 1, HOLDER_A, outcome)).toBe(true);
      const state = await store.endpoint('audit');
      expect(state).toMatchObject({ pausedSequence: 1, pausedReason: outcome.reason, leaseHolder: null, leaseExpiresAt: null });
      expect(state!.pausedAt).not.toBeNull();
      // Nothing is given up: the event stays pending, with the attempt counted.
      expect((await store.events('audit', { limit: 1 }))[0]).toMatchObject({ status: 'pending', attempts: 1, lastStatus: 503 });
      expect(await sequences('pending')).toEqual([1, 2, 3, 4]);
      // No holder may deliver a paused endpoint, whenever it asks.
      expect(await store.acquireLease('audit', HOLDER_A, NOW + 1, LEASE_MS)).toBe(false);
      expect(await store.acquireLease('audit', HOLDER_B, NOW + 10 * LEASE_MS, LEASE_MS)).toBe(false);
    });

    it('resume gives the event a pause stopped at a fresh cycle of attempts, and a holder may take the lease again', async () => {
      await store.acquireLease('audit', HOLDER_A, NOW, LEASE_MS);
      await store.markAttemptFailed('audit', 1, HOLDER_A, { status: 500, error: 'HTTP 500', nextAttemptAt: NOW + 1000 });
      await store.pause('audit', 1, HOLDER_A, { status: 500, error: 'HTTP 500', reason: 'exhausted' });
      expect(await store.resume('audit')).toEqual({ pausedSequence: 1, wasPaused: true, wasDisabled: false });
      expect((await store.events('audit', { limit: 1 }))[0]).toMatchObject({ status: 'pending', attempts: 0, nextAttemptAt: 0 });
      expect(await store.endpoint('audit')).toMatchObject({ pausedAt: null, pausedSequence: null, pausedReason: null });
      expect(await store.acquireLease('audit', HOLDER_B, NOW + 1, LEASE_MS)).toBe(true);
      expect(await store.resume('audit')).toEqual({ pausedSequence: null, wasPaused: false, wasDisabled: false });
      expect(await store.resume('nowhere')).toEqual({ pausedSequence: null, wasPaused: false, wasDisabled: false });
    });

    it('a disabled endpoint (410 Gone) keeps its events and has no deliverer until it is resumed', async () => {
      await store.disable('audit', 'https://hooks.example.com answered 410 Gone');
      expect(await store.endpoint('audit')).toMatchObject({ disabledReason: 'https://hooks.example.com answered 410 Gone' });
      expect((await store.endpoint('audit'))!.disabledAt).not.toBeNull();
      expect(await store.acquireLease('audit', HOLDER_A, NOW, LEASE_MS)).toBe(false);
      expect(await sequences('pending')).toEqual([1, 2, 3, 4]);
      expect(await store.resume('audit')).toEqual({ pausedSequence: null, wasPaused: false, wasDisabled: true });
      expect(await store.endpoint('audit')).toMatchObject({ disabledAt: null, disabledReason: null });
      expect(await store.acquireLease('audit', HOLDER_A, NOW, LEASE_MS)).toBe(true);
    });

    it('replaying failed events puts back only those, attempts reset; delivered ones stay delivered', async () => {
      await store.acquireLease('audit', HOLDER_A, NOW, LEASE_MS);
      await store.markDelivered('audit', HOLDER_A, [{ sequence: 1, status: 200, at: AT }]);
      await store.markAttemptFailed('audit', 2, HOLDER_A, { status: 503, error: 'HTTP 503', nextAttemptAt: null });
      await store.markDelivered('audit', HOLDER_A, [{ sequence: 3, status: 200, at: AT }]);
      await store.markAttemptFailed('audit', 4, HOLDER_A, { status: 503, error: 'HTTP 503', nextAttemptAt: null });
      expect(await store.replay('audit', { failed: true })).toBe(2);
      expect(await sequences('pending')).toEqual([2, 4]);
      expect(await sequences('delivered')).toEqual([1, 3]);
      expect((await store.pending('audit', 10)).map((event) => [event.sequence, event.attempts, event.nextAttemptAt])).toEqual([
        [2, 0, 0],
        [4, 0, 0],
      ]);
      expect(await store.replay('audit', { failed: true })).toBe(0);
    });

    it('replaying from a sequence puts back every event from it, delivered ones too, and re-enables and resumes', async () => {
      await store.acquireLease('audit', HOLDER_A, NOW, LEASE_MS);
      await store.markDelivered(
        'audit',
        HOLDER_A,
        [1, 2, 3].map((sequence) => ({ sequence, status: 200, at: AT })),
      );
      await store.pause('audit', 4, HOLDER_A, { status: 503, error: 'HTTP 503', reason: 'exhausted' });
      await store.disable('audit', 'gone');
      expect(await store.replay('audit', { fromSequence: 2 })).toBe(3);
      expect(await sequences('pending')).toEqual([2, 3, 4]);
      expect(await sequences('delivered')).toEqual([1]);
      expect((await store.events('audit', { fromSequence: 2, limit: 10 })).every((event) => event.deliveredAt === null)).toBe(true);
      expect((await store.pending('audit', 10)).map((event) => event.attempts)).toEqual([0, 0, 0]);
      expect(await store.endpoint('audit')).toMatchObject({ disabledAt: null, pausedAt: null, pausedSequence: null });
      expect(await store.acquireLease('audit', HOLDER_B, NOW + 1, LEASE_MS)).toBe(true);
      // Sent again under the new holder, and marked again.
      expect(await store.markDelivered('audit', HOLDER_B, [{ sequence: 2, status: 200, at: AT }])).toBe(1);
    });
  });
}
