import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '@gateway/core';
import { createVault, type Vault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../../../../test-support/cli.js';
import { postgresForThisFile } from '../../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../../test/support/databases.js';
import { rotatingProvider } from '../../../../test/support/rotating-provider.js';
import { openPostgres, type PostgresPool } from '../../../store/postgres/database.js';
import { postgresEphemeralState, postgresEphemeralStateMigrations } from '../../../store/postgres/ephemeral-state.js';
import { postgresLeaseMigrations, postgresLeases } from '../../../store/postgres/leases.js';
import { linkedAccountsContract, type LinkedAccountsFactory } from '../contract/linked-accounts.contract.js';
import { createPersonLogins } from '../index.js';
import { readTokens, writeTokens } from '../token-vault.js';
import { postgresLinkedAccountMigrations, postgresLinkedAccounts } from './index.js';

/** Each test: a fresh database on this file's PostgreSQL, migrated as the gateway migrates it. */
const postgres = postgresForThisFile();
const postgresFactory: LinkedAccountsFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresLinkedAccountMigrations);
  return { accounts: postgresLinkedAccounts(database.pool), close: database.close };
};

linkedAccountsContract('PostgreSQL', postgresFactory);

const LOGIN = 'orders/oauth';

/**
 * Two replicas as several hosts run them: one gateway database (links, leases) and one `postgres` vault in a database
 * and role of its own, each replica with its own pool on both and nothing shared in memory or on disk.
 */
async function twoReplicas(issuer: string) {
  const directory = await temporaryDirectory('gateway-person-replicas-');
  const suffix = `${process.pid}_${randomBytes(4).toString('hex')}`;
  const password = `pw-${randomBytes(9).toString('hex')}`;
  await postgres.server.psql(`CREATE ROLE vault_${suffix} LOGIN PASSWORD '${password}'`);
  await postgres.server.psql(`CREATE DATABASE vault_${suffix} OWNER vault_${suffix}`);
  const env = {
    VAULT_DB_URL: `postgres://vault_${suffix}:${password}@127.0.0.1:${postgres.server.port}/vault_${suffix}`,
    VAULT_KEK: randomBytes(32).toString('base64'),
  };
  const loaded = parseConfig(
    [
      'gateway:',
      '  url: http://127.0.0.1:8080',
      'sources:',
      '  orders:',
      '    kind: openapi',
      '    document: x.yaml',
      '    credentials:',
      `      oauth: { type: oauthPerson, issuer: "${issuer}", clientId: gateway, secret: client-secret, scopes: [openid] }`,
      'vault:',
      '  provider: postgres',
      '  postgres: { url: { env: VAULT_DB_URL }, key: { env: VAULT_KEK } }',
      '',
    ].join('\n'),
    join(directory.path, 'gateway.yaml'),
  );
  const gatewayDatabase = await freshPostgresDatabase(postgres.server, [
    ...postgresLinkedAccountMigrations,
    ...postgresLeaseMigrations,
    ...postgresEphemeralStateMigrations,
  ]);
  const ticketKey = randomBytes(32);
  // Each replica: its own pool on the gateway's database (another host's connections) and its own vault instance.
  const replicas: Array<{ vault: Vault; pool: PostgresPool }> = [];
  for (let index = 0; index < 2; index += 1) {
    replicas.push({ vault: await createVault(loaded, { env }), pool: openPostgres(gatewayDatabase.url, { max: 3 }) });
  }
  await replicas[0]!.vault.set('client-secret', 'a client secret');
  const logins = replicas.map(({ vault, pool }) =>
    createPersonLogins({
      loaded,
      vault,
      accounts: postgresLinkedAccounts(pool),
      leases: postgresLeases(pool),
      ephemeral: postgresEphemeralState(pool),
      ticketKey,
      warn: () => undefined,
    }),
  );
  return {
    replicas,
    logins,
    gatewayUrl: gatewayDatabase.url,
    async close() {
      for (const { vault, pool } of replicas) {
        await vault.close?.();
        await pool.end();
      }
      await gatewayDatabase.close();
      await directory.cleanup();
    },
  };
}

describe('per-person logins on replicas sharing a postgres vault', () => {
  it('a login linked on one replica is used on the other; an expiring token is refreshed once for both', async () => {
    const provider = await rotatingProvider();
    const setup = await twoReplicas(provider.issuer);
    try {
      const [first, second] = setup.logins as [ReturnType<typeof createPersonLogins>, ReturnType<typeof createPersonLogins>];
      const link = {
        person: 'local:alice',
        login: LOGIN,
        subject: 'alice',
        scopes: ['openid'],
        linkedAt: Date.now(),
        expiresAt: Date.now() + 3_600_000,
      };
      // Linked on the first replica: its tokens go to the shared vault, its link to the shared database.
      const fresh = { accessToken: 'at-alice', refreshToken: 'rt-alice', expiresAt: Date.now() + 3_600_000, scope: 'openid' };
      await writeTokens(setup.replicas[0]!.vault, 'local:alice', LOGIN, { ...fresh, obtainedAt: Date.now() });
      await postgresLinkedAccounts(setup.replicas[0]!.pool).link(link);
      await second.load();
      expect(await second.accessToken('local:alice', LOGIN)).toEqual({ token: 'at-alice', subject: 'alice' });
      expect(provider.grants).toEqual([]);

      // About to expire: both replicas call at once; one refresh grant, and both get the new token.
      await writeTokens(setup.replicas[1]!.vault, 'local:alice', LOGIN, {
        ...fresh,
        obtainedAt: Date.now() - 3_600_000,
        expiresAt: Date.now() - 1,
      });
      const answers = await Promise.all([first, second].map((logins) => logins.accessToken('local:alice', LOGIN)));
      expect(answers).toEqual([
        { token: 'at-alice-1', subject: 'alice' },
        { token: 'at-alice-1', subject: 'alice' },
      ]);
      expect(provider.grants).toEqual(['rt-alice']);
      expect((await readTokens(setup.replicas[0]!.vault, 'local:alice', LOGIN))?.refreshToken).toBe('rt-alice-1');

      // The gateway's own database holds the link, never a token.
      const pool = openPostgres(setup.gatewayUrl, { max: 1 });
      try {
        const { rows } = await pool.query<{ dump: string }>(
          "SELECT string_agg(t::text, ' ') AS dump FROM (SELECT * FROM linked_accounts) t",
        );
        expect(rows[0]!.dump).toContain('alice');
        for (const secret of ['at-alice', 'rt-alice', 'a client secret']) expect(rows[0]!.dump).not.toContain(secret);
      } finally {
        await pool.end();
      }
    } finally {
      await setup.close();
      await provider.close();
    }
  });
});
