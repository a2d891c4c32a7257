import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApprovalRecord, Approvals, NewApproval } from '../ports.js';

/**
 * What a contract suite runs against: a fresh, empty approvals store of one adapter, and how to dispose of it.
 * `second`, when the adapter can give one: another handle on the same backing database (another process or
 * replica), for the races. A PostgreSQL adapter passes a factory of its own; the suite does not change.
 */
export interface ApprovalsUnderTest {
  approvals: Approvals;
  second?: Approvals;
  close(): Promise<void>;
}

export type ApprovalsFactory = () => Promise<ApprovalsUnderTest>;

const MINUTE = 60_000;
const NOW = 1_800_000_000_000;

function refundCall(overrides: Partial<NewApproval> = {}): NewApproval {
  return {
    sessionId: 'session-1',
    tool: 'refund_order',
    fingerprint: 'sha256:aaa',
    argumentsDigest: 'hmac-sha256:111',
    subject: 'local:alice',
    personName: 'alice',
    clientId: 'client-1',
    clientName: 'Editor',
    source: 'orders',
    target: 'POST /orders/{orderId}/refund',
    argumentsPreview: '{"orderId":"ord_1001","amount":25}',
    approvers: null,
    expiresAt: NOW + 10 * MINUTE,
    ...overrides,
  };
}

export function approvalsContract(adapter: string, open: ApprovalsFactory): void {
  describe(`approvals port (${adapter})`, () => {
    let store: ApprovalsUnderTest;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    it('asks once per call: a retry before the person answered gets the same waiting approval', async () => {
      const first = await store.approvals.request(refundCall(), NOW);
      expect(first).toMatchObject({ status: 'waiting', decidedBy: null, approvers: null, createdAt: NOW });
      expect(first.id).toMatch(/^approval-[A-Za-z0-9_-]{20,}$/);
      const again = await store.approvals.request(refundCall(), NOW + 1000);
      expect(again.id).toBe(first.id);
      // Other arguments are another call: another approval.
      const other = await store.approvals.request(refundCall({ argumentsDigest: 'hmac-sha256:222' }), NOW);
      expect(other.id).not.toBe(first.id);
      expect(await store.approvals.find(first.id, NOW)).toEqual(first);
      expect(await store.approvals.find('approval-unknown', NOW)).toBeUndefined();
    });

    it('decides a waiting approval once, recording who; a second decision writes nothing', async () => {
      const asked = await store.approvals.request(refundCall({ approvers: ['@operators', 'bob'] }), NOW);
      const approved = await store.approvals.decide(asked.id, 'approved', 'bob', NOW + 5000);
      expect(approved).toMatchObject({ status: 'approved', decidedBy: 'bob', decidedAt: NOW + 5000, approvers: ['@operators', 'bob'] });
      expect(await store.approvals.decide(asked.id, 'denied', 'mallory', NOW + 6000)).toBe('not-waiting');
      expect(await store.approvals.find(asked.id, NOW + 6000)).toMatchObject({ status: 'approved', decidedBy: 'bob' });
      expect(await store.approvals.decide('approval-unknown', 'approved', 'bob', NOW)).toBeUndefined();
    });

    it('is used once, only when approved and unexpired', async () => {
      const asked = await store.approvals.request(refundCall(), NOW);
      expect(await store.approvals.use(asked.id, NOW)).toBe(false); // still waiting
      await store.approvals.decide(asked.id, 'approved', 'alice', NOW);
      expect(await store.approvals.use(asked.id, NOW + 1)).toBe(true);
      expect(await store.approvals.use(asked.id, NOW + 2)).toBe(false);
      expect(await store.approvals.find(asked.id, NOW + 2)).toMatchObject({ status: 'used', usedAt: NOW + 1 });
      // A used approval is spent: the same call asks again.
      expect(await store.approvals.findFor(refundCall(), NOW + 3)).toBeUndefined();
      const next = await store.approvals.request(refundCall(), NOW + 3);
      expect(next.id).not.toBe(asked.id);
      expect(next.status).toBe('waiting');
    });

    it('a denied approval is not usable, and findFor reports it for the retry to be told', async () => {
      const asked = await store.approvals.request(refundCall(), NOW);
      await store.approvals.decide(asked.id, 'denied', 'alice', NOW + 10);
      expect(await store.approvals.use(asked.id, NOW + 20)).toBe(false);
      expect(await store.approvals.findFor(refundCall(), NOW + 20)).toMatchObject({ id: asked.id, status: 'denied' });
    });

    it('expires: an unanswered or unused approval past its time cannot be decided or used, and a new one is asked', async () => {
      const asked = await store.approvals.request(refundCall({ expiresAt: NOW + MINUTE }), NOW);
      expect(await store.approvals.decide(asked.id, 'approved', 'alice', NOW + MINUTE)).toBe('not-waiting');
      expect(await store.approvals.find(asked.id, NOW + MINUTE)).toMatchObject({ status: 'expired' });
      const approvedLate = await store.approvals.request(refundCall({ expiresAt: NOW + 3 * MINUTE }), NOW + 2 * MINUTE);
      expect(approvedLate.id).not.toBe(asked.id);
      await store.approvals.decide(approvedLate.id, 'approved', 'alice', NOW + 2 * MINUTE);
      expect(await store.approvals.use(approvedLate.id, NOW + 3 * MINUTE)).toBe(false);
    });

    it('expire marks each waiting or unused approved approval past its time once, on any handle, and leaves the rest', async () => {
      const waiting = await store.approvals.request(refundCall({ expiresAt: NOW + MINUTE }), NOW);
      const approved = await store.approvals.request(refundCall({ argumentsDigest: 'hmac-sha256:2', expiresAt: NOW + MINUTE }), NOW);
      await store.approvals.decide(approved.id, 'approved', 'alice', NOW + 1);
      const denied = await store.approvals.request(refundCall({ argumentsDigest: 'hmac-sha256:3', expiresAt: NOW + MINUTE }), NOW);
      await store.approvals.decide(denied.id, 'denied', 'alice', NOW + 1);
      const used = await store.approvals.request(refundCall({ argumentsDigest: 'hmac-sha256:4', expiresAt: NOW + MINUTE }), NOW);
      await store.approvals.decide(used.id, 'approved', 'alice', NOW + 1);
      await store.approvals.use(used.id, NOW + 2);
      const later = await store.approvals.request(refundCall({ argumentsDigest: 'hmac-sha256:5' }), NOW);
      expect(await store.approvals.expire(NOW + MINUTE - 1)).toEqual([]);
      const handles = [store.approvals, store.second ?? store.approvals];
      const [first, second] = await Promise.all(handles.map((handle) => handle.expire(NOW + MINUTE)));
      const expired = [...first!, ...second!];
      expect(expired.map((record) => record.id).sort()).toEqual([waiting.id, approved.id].sort());
      expect(expired.every((record) => record.status === 'expired')).toBe(true);
      expect(await store.approvals.find(approved.id, NOW + MINUTE)).toMatchObject({ status: 'expired', decidedBy: 'alice' });
      expect(await store.approvals.find(denied.id, NOW + MINUTE)).toMatchObject({ status: 'denied' });
      expect(await store.approvals.find(later.id, NOW + MINUTE)).toMatchObject({ status: 'waiting' });
      expect(await store.approvals.expire(NOW + 2 * MINUTE)).toEqual([]);
      // A call retried after its approval expired asks anew.
      expect((await store.approvals.request(refundCall({ expiresAt: NOW + 5 * MINUTE }), NOW + 2 * MINUTE)).id).not.toBe(waiting.id);
    });

    it('lists newest first, by session and by status (expired derived)', async () => {
      const a = await store.approvals.request(refundCall({ expiresAt: NOW + MINUTE }), NOW);
      const b = await store.approvals.request(refundCall({ argumentsDigest: 'hmac-sha256:2' }), NOW + 1);
      const c = await store.approvals.request(refundCall({ sessionId: 'session-2' }), NOW + 2);
      await store.approvals.decide(b.id, 'approved', 'alice', NOW + 3);
      const later = NOW + 11 * MINUTE;
      expect((await store.approvals.list({ limit: 10 }, NOW + 3)).map((record) => record.id)).toEqual([c.id, b.id, a.id]);
      expect((await store.approvals.list({ limit: 10, sessionId: 'session-1' }, NOW + 3)).map((record) => record.id)).toEqual([b.id, a.id]);
      expect((await store.approvals.list({ limit: 10, statuses: ['expired'] }, later)).map((record) => record.id)).toEqual([
        c.id,
        b.id,
        a.id,
      ]);
      expect((await store.approvals.list({ limit: 10, statuses: ['approved'] }, NOW + 3)).map((record) => record.id)).toEqual([b.id]);
      expect(await store.approvals.list({ limit: 1 }, NOW + 3)).toHaveLength(1);
    });

    it('filters by several states and pages in the store: an expired one is filtered as expired, not as waiting', async () => {
      const asked = [];
      for (let index = 0; index < 7; index += 1) {
        asked.push(
          await store.approvals.request(refundCall({ argumentsDigest: `hmac-sha256:${index}`, expiresAt: NOW + MINUTE }), NOW + index),
        );
      }
      const [first, second, third] = asked as [ApprovalRecord, ApprovalRecord, ApprovalRecord, ...ApprovalRecord[]];
      await store.approvals.decide(first.id, 'approved', 'alice', NOW + 10);
      await store.approvals.decide(second.id, 'denied', 'bob', NOW + 10);
      await store.approvals.decide(third.id, 'approved', 'alice', NOW + 10);
      await store.approvals.use(third.id, NOW + 11);
      const ids = (records: ApprovalRecord[]) => records.map((record) => record.id);
      const newestFirst = ids([...asked].reverse());
      // Before the expiry: four waiting, one approved, one denied, one used.
      const waiting = await store.approvals.list({ limit: 3, statuses: ['waiting'] }, NOW + 20);
      expect(ids(waiting)).toEqual(newestFirst.slice(0, 3));
      expect(ids(await store.approvals.list({ limit: 3, offset: 3, statuses: ['waiting'] }, NOW + 20))).toEqual(newestFirst.slice(3, 4));
      const decided = await store.approvals.list({ limit: 10, statuses: ['approved', 'denied', 'used'] }, NOW + 20);
      expect(ids(decided)).toEqual([third.id, second.id, first.id]);
      expect(decided.map((record) => [record.status, record.decidedBy])).toEqual([
        ['used', 'alice'],
        ['denied', 'bob'],
        ['approved', 'alice'],
      ]);
      // After it: the waiting ones and the approved, unused one read (and filter) as expired; denied and used stay.
      const later = NOW + 2 * MINUTE;
      expect(await store.approvals.list({ limit: 10, statuses: ['waiting', 'approved'] }, later)).toEqual([]);
      const expired = await store.approvals.list({ limit: 2, offset: 2, statuses: ['expired'] }, later);
      expect(ids(expired)).toEqual([newestFirst[2], newestFirst[3]]);
      expect(expired.every((record) => record.status === 'expired')).toBe(true);
      expect(ids(await store.approvals.list({ limit: 10, offset: 4, statuses: ['expired'] }, later))).toEqual([first.id]);
      expect(ids(await store.approvals.list({ limit: 10, offset: 7 }, later))).toEqual([]);
    });

    it('two handles racing: one decision wins, one use wins, one approval per call', async () => {
      if (!store.second) return expect.fail(`the ${adapter} factory gives no second handle on the same database`);
      const second = store.second;
      const [one, two] = await Promise.all([store.approvals.request(refundCall(), NOW), second.request(refundCall(), NOW)]);
      expect(one.id).toBe(two.id);
      const decisions = await Promise.all([
        store.approvals.decide(one.id, 'approved', 'alice', NOW + 1),
        second.decide(one.id, 'denied', 'bob', NOW + 1),
      ]);
      expect(decisions.filter((decision) => decision === 'not-waiting')).toHaveLength(1);
      const decided = (await store.approvals.find(one.id, NOW + 1))!;
      if (decided.status === 'approved') {
        const uses = await Promise.all([store.approvals.use(one.id, NOW + 2), second.use(one.id, NOW + 2)]);
        expect(uses.filter(Boolean)).toHaveLength(1);
      } else {
        expect(decided.status).toBe('denied');
      }
    });
  });
}
