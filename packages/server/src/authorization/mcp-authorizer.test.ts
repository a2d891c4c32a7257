import { join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { openDatabase, type SqliteDatabase } from '../store/database.js';
import { createMcpAuthorizer } from './mcp-authorizer.js';
import { ACCESS_TOKEN_ALGORITHM, type SigningKey, type SigningKeySet } from './oauth/signing-keys.js';
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

async function keySet(): Promise<SigningKeySet> {
  const { privateKey, publicKey } = await generateKeyPair(ACCESS_TOKEN_ALGORITHM, { crv: 'Ed25519', extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const key: SigningKey = { kid, createdAt: new Date().toISOString(), privateKey, publicKey, publicJwk: { ...publicJwk, kid } };
  return { current: key, all: [key], jwks: () => ({ keys: [key.publicJwk] }), byKid: (wanted) => (wanted === kid ? key : undefined) };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('the /mcp authorizer', () => {
  it('reads a session’s state once per request (token check and call decision share it); a revocation is seen at once', async () => {
    const sessions = new Sessions(database);
    const tokens = new AccessTokens(await keySet(), ISSUER, AUDIENCE, 600);
    const authorizer = createMcpAuthorizer({ tokens, sessions, resourceMetadataUrl: `${ISSUER}.well-known/oauth-protected-resource` });
    const session = sessions.open({
      subject: 'alice',
      personName: 'alice',
      clientId: 'client-1',
      clientName: 'Client',
      tools: [],
      logins: [],
      expiresAt: Date.now() + 60_000,
    });
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
    const other = sessions.open({
      subject: 'alice',
      personName: 'alice',
      clientId: 'client-1',
      clientName: 'Client',
      tools: [],
      logins: [],
      expiresAt: Date.now() + 60_000,
    });
    await nextTurn();
    expect(authorizer.isSessionOpen(other.id)).toBe(true);
    database
      .prepare('UPDATE oauth_sessions SET revoked_at = ? WHERE number = ?')
      .run(Date.now(), Number(other.id.slice('session-'.length)));
    await nextTurn();
    expect(authorizer.isSessionOpen(other.id)).toBe(false);
  });
});
