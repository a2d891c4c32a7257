import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { testSigningKeySet } from '../../test/support/signing-keys.js';
import { openDatabase, type SqliteDatabase } from '../store/database.js';
import { createMcpAuthorizer } from './mcp-authorizer.js';
import { AccessTokens } from './oauth/tokens.js';
import { authorizationMigrations } from './index.js';
import { Sessions } from './stores/sessions.js';

const ISSUER = 'http://127.0.0.1:9/';
const AUDIENCE = 'http://127.0.0.1:9/mcp';

let directory: { path: string; cleanup: () => Promise<void> };
let database: SqliteDatabase;

beforeEach(async () => {
  directory = await temporaryDirectory('gateway-mcp-authorizer-');
  database = openDatabase(join(directory.path, 'gateway.db'), authorizationMigrations);
});

afterEach(async () => {
  database.close();
  await directory.cleanup();
});

/** A minute-long session of alice's for client-1, approving nothing in particular. */
function openSession(sessions: Sessions) {
  return sessions.open({
    subject: 'alice',
    personName: 'alice',
    clientId: 'client-1',
    clientName: 'Client',
    tools: [],
    logins: [],
    expiresAt: Date.now() + 60_000,
  });
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('the /mcp authorizer', () => {
  it('reads a session’s state once per request (token check and call decision share it); a revocation is seen at once', async () => {
    const sessions = new Sessions(database);
    const tokens = new AccessTokens(await testSigningKeySet(), ISSUER, AUDIENCE, 600);
    const authorizer = createMcpAuthorizer({ tokens, sessions, resourceMetadataUrl: `${ISSUER}.well-known/oauth-protected-resource` });
    const session = openSession(sessions);
    const { token } = await tokens.issue(session);
    const reads: string[] = [];
    const read = sessions.isOpen.bind(sessions);
    sessions.isOpen = (id, now) => {
      reads.push(id);
      return read(id, now);
    };
    const request = { headers: { authorization: `Bearer ${token}` } };

    await nextTurn();
    expect(await authorizer.authenticate(request)).toMatchObject({ ok: true });
    expect(authorizer.isSessionOpen(session.id)).toBe(true);
    expect(reads).toEqual([session.id]);

    // The next request, on a later turn, reads it again (another process may have revoked it meanwhile).
    await nextTurn();
    expect(await authorizer.authenticate(request)).toMatchObject({ ok: true });
    expect(reads).toEqual([session.id, session.id]);

    // Revoked in this process: refused at once, within the same turn.
    sessions.revoke(session.id, 'test');
    expect(authorizer.isSessionOpen(session.id)).toBe(false);
    expect(await authorizer.authenticate(request)).toMatchObject({ ok: false, status: 401 });

    // Revoked behind this process's back (another process, the CLI): seen from the next turn on.
    const other = openSession(sessions);
    await nextTurn();
    expect(authorizer.isSessionOpen(other.id)).toBe(true);
    database
      .prepare('UPDATE oauth_sessions SET revoked_at = ? WHERE number = ?')
      .run(Date.now(), Number(other.id.slice('session-'.length)));
    await nextTurn();
    expect(authorizer.isSessionOpen(other.id)).toBe(false);
  });
});
