/**
 * Two replicas' /mcp authorizers on one database: a session revoked through the first is refused by the second
 * within a second, and the second's listeners (its notification streams) hear of it without any request of that
 * session reaching it. On PostgreSQL (two pools, LISTEN/NOTIFY) and on SQLite (two connections, `--workers`).
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { postgresForThisFile } from '../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../test/support/databases.js';
import { testSigningKeySet } from '../../test/support/signing-keys.js';
import type { ChangeFeed } from '../store/changes.js';
import { CHANGE_DELIVERY_BOUND_MS, eventually } from '../store/contract/changes.contract.js';
import { openPostgresChangeFeed, postgresChangeMigrations } from '../store/postgres/changes.js';
import { openPostgres } from '../store/postgres/database.js';
import { changeMigrations, sqliteChangeFeed } from '../store/sqlite/changes.js';
import { openDatabase } from '../store/sqlite/database.js';
import { authorizationMigrations } from './index.js';
import { createMcpAuthorizer } from './mcp-authorizer.js';
import { AccessTokens } from './oauth/tokens.js';
import type { Sessions } from './stores/ports.js';
import { PostgresSessions, postgresAuthorizationMigrations } from './stores/postgres/index.js';
import { SqliteSessions } from './stores/sqlite/sessions.js';

const ISSUER = 'http://127.0.0.1:9/';
const AUDIENCE = 'http://127.0.0.1:9/mcp';
const postgres = postgresForThisFile();

interface Replica {
  sessions: Sessions;
  changes: ChangeFeed;
}

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function postgresReplicas(): Promise<[Replica, Replica]> {
  const database = await freshPostgresDatabase(postgres.server, [...postgresAuthorizationMigrations, ...postgresChangeMigrations]);
  closers.push(() => database.close());
  const replica = async (): Promise<Replica> => {
    const pool = openPostgres(database.url, { max: 3 });
    const changes = await openPostgresChangeFeed(pool, database.url);
    closers.push(() => pool.end());
    closers.push(() => changes.close());
    return { sessions: new PostgresSessions(pool), changes };
  };
  return [await replica(), await replica()];
}

async function sqliteReplicas(): Promise<[Replica, Replica]> {
  const directory = await temporaryDirectory('gateway-session-changes-');
  closers.push(() => directory.cleanup());
  const replica = (): Replica => {
    const database = openDatabase(join(directory.path, 'gateway.db'), [...authorizationMigrations, ...changeMigrations]);
    const changes = sqliteChangeFeed(database);
    closers.push(() => {
      database.close();
    });
    closers.push(() => changes.close());
    return { sessions: new SqliteSessions(database), changes };
  };
  return [replica(), replica()];
}

describe.each([
  ['PostgreSQL', postgresReplicas],
  ['SQLite', sqliteReplicas],
])('a revocation across replicas (%s)', (_adapter, replicas) => {
  it('a session revoked on the first replica is refused on the second within a second, its streams told without a request', async () => {
    const [first, second] = await replicas();
    const tokens = new AccessTokens(await testSigningKeySet(), ISSUER, AUDIENCE, 600);
    const authorizer = (replica: Replica) =>
      createMcpAuthorizer({
        tokens,
        sessions: replica.sessions,
        resourceMetadataUrl: `${ISSUER}.well-known/oauth-protected-resource`,
        changes: replica.changes,
      });
    const [one, two] = [authorizer(first), authorizer(second)];
    const session = await first.sessions.open({
      subject: 'alice',
      personName: 'alice',
      clientId: 'client-1',
      clientName: 'Client',
      tools: [],
      logins: [],
      expiresAt: Date.now() + 60_000,
    });
    const request = { headers: { authorization: `Bearer ${(await tokens.issue(session)).token}` } };
    expect(await two.authenticate(request)).toMatchObject({ ok: true });
    const ended: string[] = [];
    two.onSessionEnded!((sessionId) => ended.push(sessionId));
    // Reads no store: what the second replica last read of the session.
    expect(two.sessionState(session.id)).toBe('open');

    await first.sessions.revoke(session.id, 'operator');
    const revokedAt = Date.now();
    expect(await one.authenticate(request)).toMatchObject({ ok: false, status: 401 });
    await eventually(() => ended.length > 0);
    expect(Date.now() - revokedAt).toBeLessThan(CHANGE_DELIVERY_BOUND_MS);
    expect(ended).toEqual([session.id]);
    expect(two.sessionState(session.id)).toBe('revoked');
    expect(await two.authenticate(request)).toMatchObject({ ok: false, status: 401 });
  });
});
