import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../../../../../test-support/postgres.js';
import { openPostgres, type PostgresPool } from '../../../store/postgres/database.js';
import { migratePostgres } from '../../../store/postgres/migrate.js';
import { aliceSession } from '../contract/harness.js';
import type { AuthorizationStores } from '../ports.js';
import { sessionMigrations } from '../sqlite/index.js';
import { postgresAuthorizationStores, postgresSessionMigrations } from './index.js';

const postgres = postgresForThisFile();
const pools: PostgresPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.end()));
});

const CONNECTIONS = 6;

/**
 * Two replicas' stores on one fresh database, each pool already holding CONNECTIONS open connections, so the
 * concurrent steps below really overlap in the database instead of queueing behind connection set-up.
 */
async function twoReplicas(): Promise<[AuthorizationStores, AuthorizationStores]> {
  const url = await postgres.server.createDatabase();
  const opened = [openPostgres(url, { max: CONNECTIONS }), openPostgres(url, { max: CONNECTIONS })];
  pools.push(...opened);
  await migratePostgres(opened[0]!, postgresSessionMigrations);
  for (const pool of opened) {
    const clients = await Promise.all(Array.from({ length: CONNECTIONS }, () => pool.connect()));
    for (const client of clients) client.release();
  }
  return [postgresAuthorizationStores(opened[0]!), postgresAuthorizationStores(opened[1]!)];
}

/** `count` calls alternating between the two replicas, all started together. */
function across<T>(
  replicas: [AuthorizationStores, AuthorizationStores],
  count: number,
  step: (stores: AuthorizationStores, index: number) => Promise<T>,
) {
  return Promise.all(Array.from({ length: count }, (_, index) => step(replicas[index % 2]!, index)));
}

describe('the PostgreSQL authorization stores across replicas', () => {
  it('use the SQLite migration ids, step for step', () => {
    expect(postgresSessionMigrations.map((migration) => migration.id)).toEqual(sessionMigrations.map((migration) => migration.id));
  });

  it('of concurrent redemptions of one code on two replicas exactly one is the first', async () => {
    const replicas = await twoReplicas();
    const session = await replicas[0].sessions.open(aliceSession());
    await replicas[0].codes.save('code-1', {
      sessionId: session.id,
      clientId: 'client-1',
      redirectUri: 'http://127.0.0.1:9/callback',
      codeChallenge: 'challenge',
      resource: 'http://127.0.0.1:9/mcp',
      expiresAt: Date.now() + 60_000,
    });
    const redemptions = await across(replicas, 2 * CONNECTIONS, (stores) => stores.codes.redeem('code-1'));
    expect(redemptions.filter((redemption) => redemption?.alreadyUsed === false)).toHaveLength(1);
  });

  it('of concurrent rotations of one refresh token on two replicas exactly one rotates it', async () => {
    const replicas = await twoReplicas();
    const session = await replicas[0].sessions.open(aliceSession());
    await replicas[0].refreshTokens.save('first', { sessionId: session.id, clientId: 'client-1', expiresAt: session.expiresAt });
    const rotations = await across(replicas, 2 * CONNECTIONS, (stores, index) =>
      stores.refreshTokens.rotate('first', `next-${index}`, { graceMs: 0 }),
    );
    expect(rotations.filter((rotation) => rotation.outcome === 'rotated')).toHaveLength(1);
  });

  it('concurrent registrations from one address on two replicas cannot pass the limit', async () => {
    const replicas = await twoReplicas();
    const now = Date.now();
    const outcomes = await across(replicas, 2 * CONNECTIONS, (stores, index) =>
      stores.clients.register(
        { clientId: `dcr-${index}`, secretHash: null, metadata: {}, registeredFrom: '203.0.113.7', expiresAt: now + 60_000 },
        { since: now - 60_000, max: 3 },
        now,
      ),
    );
    expect(outcomes.filter((outcome) => outcome === 'registered')).toHaveLength(3);
  });

  it('concurrent re-approval requests on two replicas lose no tool', async () => {
    const replicas = await twoReplicas();
    const session = await replicas[0].sessions.open(aliceSession());
    await across(replicas, 2 * CONNECTIONS, (stores, index) => stores.sessions.requestReapproval(session.id, [`tool_${index % 4}`]));
    expect((await replicas[1].sessions.find(session.id))?.reapprovalTools).toEqual(['tool_0', 'tool_1', 'tool_2', 'tool_3']);
  });
});

describe('the PostgreSQL adapters', () => {
  it('are the only files of the authorization area that name node-postgres or a PostgreSQL pool', () => {
    const area = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
    const naming = readdirSync(area, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith(join('stores', 'postgres')))
      .filter((file) => /from 'pg'|PostgresPool|PostgresClient/.test(readFileSync(join(area, file), 'utf8')))
      .map((file) => relative(area, join(area, file)).split('\\').join('/'));
    expect(naming).toEqual([]);
  });
});
