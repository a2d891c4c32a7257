import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuthorizationStores, SessionRecord } from '../ports.js';
import { openAliceSession, type AuthorizationStoresFactory, type AuthorizationStoresUnderTest } from './harness.js';

const DAY_MS = 86_400_000;

/** The rules of the `AuthorizationCodes` port (../ports.ts), for any adapter. */
export function authorizationCodesContract(adapter: string, factory: AuthorizationStoresFactory): void {
  describe(`AuthorizationCodes (${adapter})`, () => {
    let underTest: AuthorizationStoresUnderTest;
    let stores: AuthorizationStores;
    let session: SessionRecord;
    beforeEach(async () => {
      underTest = await factory();
      stores = underTest.stores;
      session = await openAliceSession(stores);
    });
    afterEach(() => underTest.close());

    const issued = (expiresAt: number) => ({
      sessionId: session.id,
      clientId: 'client-1',
      redirectUri: 'http://127.0.0.1:9/callback',
      codeChallenge: 'challenge',
      resource: 'http://127.0.0.1:9/mcp',
      expiresAt,
    });

    it('a code redeems once; a second redemption says so and still names what the code was issued for', async () => {
      const now = Date.now();
      await stores.codes.save('code-1', issued(now + 60_000));
      expect(await stores.codes.redeem('code-1', now)).toEqual({ ...issued(now + 60_000), usedAt: null, alreadyUsed: false });
      expect(await stores.codes.redeem('code-1', now + 5)).toEqual({ ...issued(now + 60_000), usedAt: now, alreadyUsed: true });
      expect(await stores.codes.redeem('code-2', now)).toBeUndefined();
    });

    it('of concurrent redemptions of one code exactly one is the first', async () => {
      await stores.codes.save('code-1', issued(Date.now() + 60_000));
      const redemptions = await Promise.all(Array.from({ length: 5 }, () => stores.codes.redeem('code-1')));
      expect(redemptions.filter((redemption) => redemption?.alreadyUsed === false)).toHaveLength(1);
      expect(redemptions.filter((redemption) => redemption?.alreadyUsed === true)).toHaveLength(4);
    });

    it('purging keeps a code for a day past its expiry (a late replay is still recognised), then deletes it', async () => {
      const now = Date.now();
      await stores.codes.save('recent', issued(now - 1000));
      await stores.codes.save('old', issued(now - DAY_MS - 1000));
      await stores.codes.redeem('recent', now - 2000);
      await stores.codes.purge(now);
      expect(await stores.codes.redeem('recent', now)).toMatchObject({ alreadyUsed: true });
      expect(await stores.codes.redeem('old', now)).toBeUndefined();
    });
  });
}
