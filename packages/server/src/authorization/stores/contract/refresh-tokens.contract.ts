import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuthorizationStores, SessionRecord } from '../ports.js';
import { openAliceSession, type AuthorizationStoresFactory, type AuthorizationStoresUnderTest } from './harness.js';

const GRACE_MS = 10_000;

/** The rules of the `RefreshTokens` port (../ports.ts): rotation, the grace rule and reuse detection, for any adapter. */
export function refreshTokensContract(adapter: string, factory: AuthorizationStoresFactory): void {
  describe(`RefreshTokens (${adapter})`, () => {
    let underTest: AuthorizationStoresUnderTest;
    let stores: AuthorizationStores;
    let session: SessionRecord;
    let now: number;
    beforeEach(async () => {
      underTest = await factory();
      stores = underTest.stores;
      session = await openAliceSession(stores);
      now = Date.now();
      await stores.refreshTokens.save('first', { sessionId: session.id, clientId: 'client-1', expiresAt: session.expiresAt }, now);
    });
    afterEach(() => underTest.close());

    const rotate = (token: string, successor: string, at: number) =>
      stores.refreshTokens.rotate(token, successor, { graceMs: GRACE_MS, now: at });

    it('finds a token without using it; an unknown token is neither found nor rotated', async () => {
      expect(await stores.refreshTokens.find('first')).toEqual({
        sessionId: session.id,
        clientId: 'client-1',
        expiresAt: session.expiresAt,
        usedAt: null,
      });
      expect(await stores.refreshTokens.find('nope')).toBeUndefined();
      expect(await rotate('nope', 'next', now)).toEqual({ outcome: 'unknown' });
    });

    it('rotation retires the token for a successor of the same session, client and expiry, which rotates in turn', async () => {
      expect(await rotate('first', 'second', now + 1)).toEqual({ outcome: 'rotated', sessionId: session.id });
      expect(await stores.refreshTokens.find('first')).toMatchObject({ usedAt: now + 1 });
      expect(await stores.refreshTokens.find('second')).toEqual({
        sessionId: session.id,
        clientId: 'client-1',
        expiresAt: session.expiresAt,
        usedAt: null,
      });
      expect(await rotate('second', 'third', now + 2)).toEqual({ outcome: 'rotated', sessionId: session.id });
    });

    it('presented again within the grace window while its successor is unused: a new successor; the unused one is then reuse', async () => {
      await rotate('first', 'second', now);
      expect(await rotate('first', 'second-again', now + GRACE_MS)).toEqual({ outcome: 'reissued', sessionId: session.id });
      expect(await rotate('second', 'x', now + GRACE_MS + 1)).toMatchObject({ outcome: 'reused', sessionId: session.id });
      expect(await rotate('second-again', 'third', now + GRACE_MS + 2)).toEqual({ outcome: 'rotated', sessionId: session.id });
    });

    it('presented again after the grace window is reuse', async () => {
      await rotate('first', 'second', now);
      expect(await rotate('first', 'x', now + GRACE_MS + 1)).toMatchObject({ outcome: 'reused', sessionId: session.id });
    });

    it('presented again after its successor was used is reuse, even within the grace window', async () => {
      await rotate('first', 'second', now);
      await rotate('second', 'third', now + 1);
      expect(await rotate('first', 'x', now + 2)).toMatchObject({ outcome: 'reused', sessionId: session.id });
    });

    it('of concurrent rotations of one token exactly one rotates it', async () => {
      const rotations = await Promise.all(['a', 'b', 'c'].map((successor) => rotate('first', successor, now)));
      expect(rotations.filter((rotation) => rotation.outcome === 'rotated')).toHaveLength(1);
    });

    it('purging deletes expired tokens only', async () => {
      const short = await openAliceSession(stores, { expiresAt: now + 1000 });
      await stores.refreshTokens.save('short', { sessionId: short.id, clientId: 'client-1', expiresAt: now + 1000 }, now);
      await stores.refreshTokens.purge(now + 2000);
      expect(await stores.refreshTokens.find('short')).toBeUndefined();
      expect(await stores.refreshTokens.find('first')).toBeDefined();
    });
  });
}
