import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuthorizationStores, NewClient } from '../ports.js';
import { HOUR_MS, type AuthorizationStoresFactory, type AuthorizationStoresUnderTest } from './harness.js';

/** The rules of the `RegisteredClients` port (../ports.ts), for any adapter. */
export function registeredClientsContract(adapter: string, factory: AuthorizationStoresFactory): void {
  describe(`RegisteredClients (${adapter})`, () => {
    let underTest: AuthorizationStoresUnderTest;
    let stores: AuthorizationStores;
    beforeEach(async () => {
      underTest = await factory();
      stores = underTest.stores;
    });
    afterEach(() => underTest.close());

    const now = 1_800_000_000_000;
    const client = (clientId: string, overrides: Partial<NewClient> = {}): NewClient => ({
      clientId,
      secretHash: null,
      metadata: { client_name: 'Editor', redirect_uris: ['http://127.0.0.1:9/callback'] },
      registeredFrom: '127.0.0.1',
      expiresAt: now + HOUR_MS,
      ...overrides,
    });
    const noLimit = { since: 0, max: Number.MAX_SAFE_INTEGER };

    it('finds a registration as registered until it expires', async () => {
      expect(await stores.clients.register(client('dcr-1', { secretHash: 'hash' }), noLimit, now)).toBe('registered');
      expect(await stores.clients.find('dcr-1', now)).toEqual({
        clientId: 'dcr-1',
        secretHash: 'hash',
        metadata: { client_name: 'Editor', redirect_uris: ['http://127.0.0.1:9/callback'] },
        createdAt: now,
        lastAuthorizedAt: null,
        expiresAt: now + HOUR_MS,
      });
      expect(await stores.clients.find('dcr-1', now + HOUR_MS)).toBeUndefined();
      expect(await stores.clients.find('dcr-2', now)).toBeUndefined();
    });

    it('an authorization keeps a registration alive', async () => {
      await stores.clients.register(client('dcr-1'), noLimit, now);
      await stores.clients.touch('dcr-1', now + 5 * HOUR_MS, now + 10);
      expect(await stores.clients.find('dcr-1', now + 2 * HOUR_MS)).toMatchObject({
        lastAuthorizedAt: now + 10,
        expiresAt: now + 5 * HOUR_MS,
      });
    });

    it('an address registers at most `max` clients since `since`; other addresses and older registrations do not count', async () => {
      const limit = { since: now - HOUR_MS, max: 2 };
      await stores.clients.register(client('old'), noLimit, now - 2 * HOUR_MS);
      expect(await stores.clients.register(client('dcr-1'), limit, now)).toBe('registered');
      expect(await stores.clients.register(client('dcr-2'), limit, now)).toBe('registered');
      expect(await stores.clients.register(client('dcr-3'), limit, now)).toBe('limited');
      expect(await stores.clients.find('dcr-3', now)).toBeUndefined();
      expect(await stores.clients.register(client('dcr-4', { registeredFrom: '10.0.0.0/64' }), limit, now)).toBe('registered');
    });

    it('concurrent registrations from one address cannot pass the limit', async () => {
      const limit = { since: now - HOUR_MS, max: 2 };
      const outcomes = await Promise.all(
        Array.from({ length: 5 }, (_, index) => stores.clients.register(client(`dcr-${index}`), limit, now)),
      );
      expect(outcomes.filter((outcome) => outcome === 'registered')).toHaveLength(2);
    });

    it('purging deletes expired registrations', async () => {
      await stores.clients.register(client('short', { expiresAt: now + 1000 }), noLimit, now);
      await stores.clients.register(client('long'), noLimit, now);
      await stores.clients.purge(now + 1000);
      // Read as of before the expiry: only a deleted registration is missing then.
      expect(await stores.clients.find('short', now)).toBeUndefined();
      expect(await stores.clients.find('long', now)).toBeDefined();
    });
  });
}
