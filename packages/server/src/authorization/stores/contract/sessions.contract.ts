import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuthorizationStores } from '../ports.js';
import { aliceSession, HOUR_MS, type AuthorizationStoresFactory, type AuthorizationStoresUnderTest } from './harness.js';

/** The rules of the `Sessions` port (../ports.ts), for any adapter. */
export function sessionsContract(adapter: string, factory: AuthorizationStoresFactory): void {
  describe(`Sessions (${adapter})`, () => {
    let underTest: AuthorizationStoresUnderTest;
    let stores: AuthorizationStores;
    beforeEach(async () => {
      underTest = await factory();
      stores = underTest.stores;
    });
    afterEach(() => underTest.close());

    it('opens sessions as session-<n>, n increasing, and finds them as opened', async () => {
      const now = Date.now();
      const first = await stores.sessions.open(aliceSession({ expiresAt: now + HOUR_MS }), now);
      const second = await stores.sessions.open(aliceSession({ subject: 'bob', personName: 'Bob' }), now);
      expect(first).toEqual({
        ...aliceSession({ expiresAt: now + HOUR_MS }),
        id: first.id,
        createdAt: now,
        revokedAt: null,
        revokedReason: null,
        reapprovalRequestedAt: null,
        reapprovalTools: [],
      });
      expect(first.id).toMatch(/^session-[1-9]\d*$/);
      expect(Number(second.id.slice('session-'.length))).toBeGreaterThan(Number(first.id.slice('session-'.length)));
      expect(await stores.sessions.find(first.id)).toEqual(first);
      expect(await stores.sessions.find('session-999999')).toBeUndefined();
      expect(await stores.sessions.find('not-a-session')).toBeUndefined();
    });

    it('a session is open until it expires or is revoked; one never opened has no state', async () => {
      const now = Date.now();
      const session = await stores.sessions.open(aliceSession({ expiresAt: now + 1000 }), now);
      expect(await stores.sessions.state(session.id, now)).toBe('open');
      expect(await stores.sessions.state(session.id, now + 1000)).toBe('expired');
      await stores.sessions.revoke(session.id, 'lost laptop', now + 10);
      expect(await stores.sessions.state(session.id, now + 20)).toBe('revoked');
      // Revoked wins over expired: the history says what ended it.
      expect(await stores.sessions.state(session.id, now + 5000)).toBe('revoked');
      expect(await stores.sessions.state('session-999999', now)).toBeUndefined();
      expect(await stores.sessions.state('nonsense', now)).toBeUndefined();
    });

    it('revoking is idempotent (the first time and reason stay), tells the listeners, and refuses an unknown id', async () => {
      const heard: string[] = [];
      const stopListening = stores.sessions.onRevoke((id) => heard.push(id));
      const session = await stores.sessions.open(aliceSession());
      const revoked = await stores.sessions.revoke(session.id, 'lost laptop', 1000);
      expect(revoked).toMatchObject({ id: session.id, revokedAt: 1000, revokedReason: 'lost laptop' });
      expect(heard).toEqual([session.id]);
      const again = await stores.sessions.revoke(session.id, 'second time', 2000);
      expect(again).toMatchObject({ revokedAt: 1000, revokedReason: 'lost laptop' });
      expect(await stores.sessions.find(session.id)).toMatchObject({ revokedAt: 1000, revokedReason: 'lost laptop' });
      await expect(stores.sessions.revoke('session-999999', 'why')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' });
      stopListening();
      const other = await stores.sessions.open(aliceSession());
      await stores.sessions.revoke(other.id, 'test');
      expect(heard).toEqual([session.id, session.id]);
    });

    it('the latest open session of a person with a client skips ended sessions, other people and other clients', async () => {
      const now = Date.now();
      expect(await stores.sessions.latestOpen('alice', 'client-1', now)).toBeUndefined();
      const older = await stores.sessions.open(aliceSession({ expiresAt: now + HOUR_MS }), now);
      const newest = await stores.sessions.open(aliceSession({ expiresAt: now + HOUR_MS }), now);
      await stores.sessions.open(aliceSession({ subject: 'bob' }), now);
      await stores.sessions.open(aliceSession({ clientId: 'client-2' }), now);
      expect((await stores.sessions.latestOpen('alice', 'client-1', now))?.id).toBe(newest.id);
      await stores.sessions.revoke(newest.id, 'test', now);
      expect((await stores.sessions.latestOpen('alice', 'client-1', now))?.id).toBe(older.id);
      expect(await stores.sessions.latestOpen('alice', 'client-1', now + HOUR_MS)).toBeUndefined();
    });

    it('lists every session, ended ones too, oldest first', async () => {
      const now = Date.now();
      const a = await stores.sessions.open(aliceSession(), now);
      const b = await stores.sessions.open(aliceSession({ expiresAt: now - 1 }), now - 10);
      const c = await stores.sessions.open(aliceSession(), now);
      await stores.sessions.revoke(c.id, 'test', now);
      expect((await stores.sessions.list()).map((session) => session.id)).toEqual([a.id, b.id, c.id]);
    });

    it('a re-approval request keeps the tools asked before and the time of the first request', async () => {
      const session = await stores.sessions.open(aliceSession());
      await stores.sessions.requestReapproval(session.id, ['search_orders'], 1000);
      await stores.sessions.requestReapproval(session.id, ['get_order', 'search_orders'], 2000);
      await stores.sessions.requestReapproval(session.id, ['get_order'], 3000);
      expect(await stores.sessions.find(session.id)).toMatchObject({
        reapprovalRequestedAt: 1000,
        reapprovalTools: ['get_order', 'search_orders'],
      });
      await expect(stores.sessions.requestReapproval('session-999999', ['x'])).resolves.toBeUndefined();
    });
  });
}
