import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LinkedAccount, LinkedAccounts } from '../ports.js';

/** Fresh, empty linked accounts of one adapter (one backing database per call), and how to dispose of them. */
export type LinkedAccountsFactory = () => Promise<{ accounts: LinkedAccounts; close(): Promise<void> }>;

/** The rules of the `LinkedAccounts` port (../ports.ts), for any adapter. */
export function linkedAccountsContract(adapter: string, factory: LinkedAccountsFactory): void {
  describe(`LinkedAccounts (${adapter})`, () => {
    let underTest: Awaited<ReturnType<LinkedAccountsFactory>>;
    let accounts: LinkedAccounts;
    beforeEach(async () => {
      underTest = await factory();
      accounts = underTest.accounts;
    });
    afterEach(() => underTest.close());

    const now = 1_800_000_000_000;
    const link = (person: string, login: string, overrides: Partial<LinkedAccount> = {}): LinkedAccount => ({
      person,
      login,
      subject: `${person}-at-provider`,
      scopes: ['openid', 'orders:read'],
      linkedAt: now,
      expiresAt: now + 3_600_000,
      ...overrides,
    });

    it('finds a link as recorded, per person and login', async () => {
      await accounts.link(link('local:alice', 'orders/oauth', { scopes: ['orders:read', 'openid'] }));
      expect(await accounts.find('local:alice', 'orders/oauth')).toEqual(link('local:alice', 'orders/oauth'));
      expect(await accounts.find('local:bob', 'orders/oauth')).toBeUndefined();
      expect(await accounts.find('local:alice', 'crm/oauth')).toBeUndefined();
    });

    it('keeps a link without a provider subject', async () => {
      await accounts.link(link('local:alice', 'orders/oauth', { subject: null }));
      expect((await accounts.find('local:alice', 'orders/oauth'))?.subject).toBeNull();
    });

    it('a re-link replaces the earlier link of the same person and login', async () => {
      await accounts.link(link('local:alice', 'orders/oauth'));
      await accounts.link(link('local:alice', 'orders/oauth', { subject: 'other', linkedAt: now + 10, scopes: ['openid'] }));
      expect(await accounts.list()).toEqual([
        link('local:alice', 'orders/oauth', { subject: 'other', linkedAt: now + 10, scopes: ['openid'] }),
      ]);
    });

    it('lists every link by person then login, or one person only', async () => {
      await accounts.link(link('local:bob', 'orders/oauth'));
      await accounts.link(link('local:alice', 'orders/oauth'));
      await accounts.link(link('local:alice', 'crm/oauth'));
      expect((await accounts.list()).map((account) => [account.person, account.login])).toEqual([
        ['local:alice', 'crm/oauth'],
        ['local:alice', 'orders/oauth'],
        ['local:bob', 'orders/oauth'],
      ]);
      expect((await accounts.list({ person: 'local:bob' })).map((account) => account.login)).toEqual(['orders/oauth']);
      expect(await accounts.list({ person: 'local:carol' })).toEqual([]);
    });

    it('a refresh moves the expiry and scopes, and never brings back a removed link', async () => {
      await accounts.link(link('local:alice', 'orders/oauth'));
      expect(await accounts.refreshed('local:alice', 'orders/oauth', { expiresAt: now + 7_200_000, scopes: ['orders:read'] })).toBe(true);
      expect(await accounts.find('local:alice', 'orders/oauth')).toMatchObject({
        expiresAt: now + 7_200_000,
        scopes: ['orders:read'],
        linkedAt: now,
      });
      expect(await accounts.unlink('local:alice', 'orders/oauth')).toBe(true);
      expect(await accounts.refreshed('local:alice', 'orders/oauth', { expiresAt: now + 9_000_000, scopes: [] })).toBe(false);
      expect(await accounts.find('local:alice', 'orders/oauth')).toBeUndefined();
    });

    it("unlinking removes one person's link only, and says whether there was one", async () => {
      await accounts.link(link('local:alice', 'orders/oauth'));
      await accounts.link(link('local:bob', 'orders/oauth'));
      expect(await accounts.unlink('local:alice', 'orders/oauth')).toBe(true);
      expect(await accounts.unlink('local:alice', 'orders/oauth')).toBe(false);
      expect((await accounts.list()).map((account) => account.person)).toEqual(['local:bob']);
    });
  });
}
