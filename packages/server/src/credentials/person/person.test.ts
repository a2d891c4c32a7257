import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../../../test-support/cli.js';
import { openDatabase } from '../../store/sqlite/database.js';
import { leaseMigrations, sqliteLeases } from '../../store/sqlite/leases.js';
import { MemoryEphemeralState } from '../../store/memory/ephemeral-state.js';
import { createPersonLogins } from './index.js';
import { linkedAccountMigrations, sqliteLinkedAccounts } from './sqlite/index.js';
import { readTokens, tokenSecretName, writeTokens } from './token-vault.js';
import type { IndexedTool } from '../../publications/registry.js';
import { rotatingProvider } from '../../../test/support/rotating-provider.js';

const LOGIN = 'orders/oauth';

/** Two processes' views (as `--workers` runs them) over one database file and one file vault. */
async function twoProcesses() {
  const directory = await temporaryDirectory('gateway-person-logins-');
  const loaded = parseConfig(
    [
      'gateway:',
      '  url: http://127.0.0.1:8080',
      'sources:',
      '  orders:',
      '    kind: openapi',
      '    document: x.yaml',
      '    credentials:',
      // An issuer nothing listens on: any request to the provider would fail the test.
      '      oauth: { type: oauthPerson, issuer: "http://127.0.0.1:9", clientId: gateway, secret: s, scopes: [openid] }',
      '',
    ].join('\n'),
    join(directory.path, 'gateway.yaml'),
  );
  const vault = await createVault(loaded, { env: {} });
  const databases = [0, 1].map(() => openDatabase(join(directory.path, 'gateway.db'), linkedAccountMigrations));
  const ticketKey = randomBytes(32);
  const [first, second] = databases.map((database) =>
    createPersonLogins({
      loaded,
      vault,
      accounts: sqliteLinkedAccounts(database),
      ephemeral: new MemoryEphemeralState(),
      ticketKey,
      warn: () => undefined,
    }),
  ) as [ReturnType<typeof createPersonLogins>, ReturnType<typeof createPersonLogins>];
  const accounts = sqliteLinkedAccounts(databases[0]!);
  return {
    vault,
    accounts,
    first,
    second,
    async close() {
      for (const database of databases) database.close();
      await directory.cleanup();
    },
  };
}

const link = {
  person: 'local:alice',
  login: LOGIN,
  subject: 'alice',
  scopes: ['openid'],
  linkedAt: Date.now(),
  expiresAt: Date.now() + 3_600_000,
};
const tokens = {
  accessToken: 'at-alice',
  refreshToken: 'rt-alice',
  expiresAt: Date.now() + 3_600_000,
  scope: 'openid',
  obtainedAt: Date.now(),
};

describe('per-person logins', () => {
  it('a link made in another process is found by the next decision after a miss', async () => {
    const processes = await twoProcesses();
    try {
      await processes.second.load();
      await writeTokens(processes.vault, 'local:alice', LOGIN, tokens);
      await processes.accounts.link(link);
      expect(processes.second.isLinked('local:alice', LOGIN)).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(processes.second.isLinked('local:alice', LOGIN)).toBe(true);
      expect(processes.second.isLinked('local:bob', LOGIN)).toBe(false);
    } finally {
      await processes.close();
    }
  });

  it("a call gets the person's own fresh token without asking the provider; another person's is never used", async () => {
    const processes = await twoProcesses();
    try {
      await writeTokens(processes.vault, 'local:alice', LOGIN, tokens);
      await processes.accounts.link(link);
      await processes.first.load();
      expect(await processes.first.accessToken('local:alice', LOGIN)).toEqual({ token: 'at-alice', subject: 'alice' });
      await expect(processes.first.accessToken('local:bob', LOGIN)).rejects.toMatchObject({ code: 'PERSON_LOGIN_NOT_LINKED' });
    } finally {
      await processes.close();
    }
  });

  it('a link whose tokens are gone is removed; unlinking removes the tokens too', async () => {
    const processes = await twoProcesses();
    try {
      await processes.accounts.link(link);
      await expect(processes.first.accessToken('local:alice', LOGIN)).rejects.toMatchObject({ code: 'PERSON_LOGIN_NOT_LINKED' });
      expect(await processes.accounts.find('local:alice', LOGIN)).toBeUndefined();

      await writeTokens(processes.vault, 'local:alice', LOGIN, tokens);
      await processes.accounts.link(link);
      expect(await processes.first.unlink('local:alice', LOGIN)).toBe(true);
      expect(await readTokens(processes.vault, 'local:alice', LOGIN)).toBeUndefined();
      expect(await processes.vault.get(tokenSecretName('local:alice', LOGIN))).toBeUndefined();
      expect(processes.first.isLinked('local:alice', LOGIN)).toBe(false);
    } finally {
      await processes.close();
    }
  });

  it("a connect URL is the gateway's own page with a sealed ticket", async () => {
    const processes = await twoProcesses();
    try {
      const url = new URL(processes.first.connectUrl({ person: 'local:alice', login: LOGIN, session: 'session-1' }));
      expect(`${url.origin}${url.pathname}`).toBe('http://127.0.0.1:8080/connect');
      expect(url.searchParams.get('ticket')).toMatch(/^c1\.[\w-]+\.[\w-]+$/);
      expect(processes.first.redirectUri).toBe('http://127.0.0.1:8080/connect/callback');
    } finally {
      await processes.close();
    }
  });
});

describe('refreshing a person token across processes', () => {
  it('two processes sharing the storage refresh an expiring token once, under its lease; both calls get the new token', async () => {
    const provider = await rotatingProvider();
    const directory = await temporaryDirectory('gateway-person-refresh-');
    try {
      const loaded = parseConfig(
        [
          'gateway:',
          '  url: http://127.0.0.1:8080',
          'sources:',
          '  orders:',
          '    kind: openapi',
          '    document: x.yaml',
          '    credentials:',
          `      oauth: { type: oauthPerson, issuer: "${provider.issuer}", clientId: gateway, secret: client-secret, scopes: [openid] }`,
          '',
        ].join('\n'),
        join(directory.path, 'gateway.yaml'),
      );
      const vault = await createVault(loaded, { env: {} });
      await vault.set('client-secret', 'a client secret');
      const databases = [0, 1].map(() =>
        openDatabase(join(directory.path, 'gateway.db'), [...linkedAccountMigrations, ...leaseMigrations]),
      );
      try {
        const ticketKey = randomBytes(32);
        const processes = databases.map((database) =>
          createPersonLogins({
            loaded,
            vault,
            accounts: sqliteLinkedAccounts(database),
            leases: sqliteLeases(database),
            ephemeral: new MemoryEphemeralState(),
            ticketKey,
            warn: () => undefined,
          }),
        );
        // Linked, with a token that has just expired.
        await writeTokens(vault, 'local:alice', LOGIN, { ...tokens, obtainedAt: Date.now() - 3_600_000, expiresAt: Date.now() - 1 });
        await sqliteLinkedAccounts(databases[0]!).link(link);
        const answers = await Promise.all(processes.map((logins) => logins.accessToken('local:alice', LOGIN)));
        expect(answers).toEqual([
          { token: 'at-alice-1', subject: 'alice' },
          { token: 'at-alice-1', subject: 'alice' },
        ]);
        // One refresh grant: without the lease the second process would send the spent refresh token, and the
        // provider's invalid_grant would remove the person's link.
        expect(provider.grants).toEqual(['rt-alice']);
        expect(await sqliteLinkedAccounts(databases[0]!).find('local:alice', LOGIN)).toBeDefined();
        expect((await readTokens(vault, 'local:alice', LOGIN))?.refreshToken).toBe('rt-alice-1');
      } finally {
        for (const database of databases) database.close();
      }
    } finally {
      await directory.cleanup();
      await provider.close();
    }
  });
});

describe('the person gate for an MCP source', () => {
  it('applies to the tools of a per-person MCP source only, and asks a person who has not linked its login', async () => {
    const directory = await temporaryDirectory('gateway-person-mcp-gate-');
    const loaded = parseConfig(
      [
        'gateway:',
        '  url: http://127.0.0.1:8080',
        'sources:',
        '  who:',
        '    kind: mcp',
        '    url: http://127.0.0.1:9/mcp',
        '    credentials: { type: oauthPerson, issuer: "http://127.0.0.1:9", clientId: gateway, secret: s, scopes: [openid] }',
        '  plain:',
        '    kind: mcp',
        '    url: http://127.0.0.1:9/plain',
        '',
      ].join('\n'),
      join(directory.path, 'gateway.yaml'),
    );
    const database = openDatabase(join(directory.path, 'gateway.db'), linkedAccountMigrations);
    try {
      const vault = await createVault(loaded, { env: {} });
      const accounts = sqliteLinkedAccounts(database);
      const logins = createPersonLogins({
        loaded,
        vault,
        accounts,
        ephemeral: new MemoryEphemeralState(),
        ticketKey: randomBytes(32),
        warn: () => undefined,
      });
      expect([...logins.settings.keys()]).toEqual(['who/mcp']);
      const tool = (sourceName: string) => ({ kind: 'mcp', sourceName, name: `${sourceName}-tool` }) as unknown as IndexedTool;
      const [personal, plain] = [tool('who'), tool('plain')];
      expect(logins.gate.appliesTo?.(personal)).toBe(true);
      expect(logins.gate.appliesTo?.(plain)).toBe(false);
      const caller = (granted: string[]) => ({
        sessionId: 'session-1',
        subject: 'local:alice',
        clientId: 'client',
        tools: new Map(),
        logins: new Set(granted),
        expiresAt: Date.now() + 60_000,
      });
      const asked = await logins.gate.pendingAction(caller(['who/mcp']), personal, {}, 'digest');
      expect(asked).toMatchObject({
        reason: 'PERSON_ACTION_REQUIRED',
        url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:8080\/connect\?ticket=/),
      });
      // Not granted in the session: no link is asked for (the core rules refuse with LOGIN_NOT_IN_SESSION).
      expect(await logins.gate.pendingAction(caller([]), personal, {}, 'digest')).toBeUndefined();
      await writeTokens(vault, 'local:alice', 'who/mcp', tokens);
      // Linked by another process (its own store handle): this one's cache does not know yet, and the gate reads the
      // store before asking the person, so the very next call goes on (no second trip to the connect page).
      await sqliteLinkedAccounts(database).link({ ...link, login: 'who/mcp' });
      expect(logins.isLinked('local:alice', 'who/mcp')).toBe(false);
      expect(await logins.gate.pendingAction(caller(['who/mcp']), personal, {}, 'digest')).toBeUndefined();
    } finally {
      database.close();
      await directory.cleanup();
    }
  });
});
