import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { testSigningKeySet } from '../../test/support/signing-keys.js';
import { openDatabase, type SqliteDatabase } from '../store/sqlite/database.js';
import { createMcpAuthorizer } from './mcp-authorizer.js';
import { AccessTokens } from './oauth/tokens.js';
import { authorizationMigrations } from './index.js';
import { SqliteSessions } from './stores/sqlite/sessions.js';

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
function openSession(sessions: SqliteSessions) {
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

/** What `gateway sessions revoke` in another process does: its own store revokes the session; this process is not told. */
async function revokeBehindTheBack(sessionId: string): Promise<void> {
  await new SqliteSessions(database).revoke(sessionId, 'another process');
}

describe('the /mcp authorizer', () => {
  it('reads a session’s state once per request (token check and call decision share it); a revocation is seen at once', async () => {
    const sessions = new SqliteSessions(database);
    const tokens = new AccessTokens(await testSigningKeySet(), ISSUER, AUDIENCE, 600);
    const authorizer = createMcpAuthorizer({ tokens, sessions, resourceMetadataUrl: `${ISSUER}.well-known/oauth-protected-resource` });
    const session = await openSession(sessions);
    const { token } = await tokens.issue(session);
    const reads: string[] = [];
    const read = sessions.state.bind(sessions);
    sessions.state = (id, now) => {
      reads.push(id);
      return read(id, now);
    };
    const request = { headers: { authorization: `Bearer ${token}` } };

    await nextTurn();
    expect(await authorizer.authenticate(request)).toMatchObject({ ok: true });
    expect(authorizer.sessionState(session.id)).toBe('open');
    expect(reads).toEqual([session.id]);

    // The next request, on a later turn, reads it again (another process may have revoked it meanwhile).
    await nextTurn();
    expect(await authorizer.authenticate(request)).toMatchObject({ ok: true });
    expect(reads).toEqual([session.id, session.id]);

    // Revoked in this process: refused at once, within the same turn.
    await sessions.revoke(session.id, 'test');
    expect(authorizer.sessionState(session.id)).toBe('revoked');
    expect(await authorizer.authenticate(request)).toMatchObject({ ok: false, status: 401 });

    // Revoked behind this process's back (another process, the CLI): seen by the next request.
    const other = await openSession(sessions);
    const otherRequest = { headers: { authorization: `Bearer ${(await tokens.issue(other)).token}` } };
    await nextTurn();
    expect(await authorizer.authenticate(otherRequest)).toMatchObject({ ok: true });
    expect(authorizer.sessionState(other.id)).toBe('open');
    await revokeBehindTheBack(other.id);
    await nextTurn();
    expect(await authorizer.authenticate(otherRequest)).toMatchObject({ ok: false, status: 401, reason: 'session_revoked' });
    expect(authorizer.sessionState(other.id)).toBe('revoked');
  });

  it('a call-time re-check on a later turn answers the last state read, then reads again: an ended session ends its streams', async () => {
    const sessions = new SqliteSessions(database);
    const tokens = new AccessTokens(await testSigningKeySet(), ISSUER, AUDIENCE, 600);
    const authorizer = createMcpAuthorizer({ tokens, sessions, resourceMetadataUrl: `${ISSUER}.well-known/oauth-protected-resource` });
    const ended: string[] = [];
    authorizer.onSessionEnded!((sessionId) => ended.push(sessionId));
    const session = await openSession(sessions);
    const request = { headers: { authorization: `Bearer ${(await tokens.issue(session)).token}` } };
    expect(await authorizer.authenticate(request)).toMatchObject({ ok: true });
    await revokeBehindTheBack(session.id);
    await nextTurn();
    // The state the token check of this call read; a read for the next re-check starts now.
    expect(authorizer.sessionState(session.id)).toBe('open');
    await nextTurn();
    expect(authorizer.sessionState(session.id)).toBe('revoked');
    expect(ended).toEqual([session.id]);
    // Revoked in this process: the listeners hear it at once, and once.
    const other = await openSession(sessions);
    await sessions.revoke(other.id, 'test');
    await nextTurn();
    expect(ended).toEqual([session.id, other.id]);
  });
});

describe('refused /mcp requests', () => {
  async function setUp() {
    const sessions = new SqliteSessions(database);
    const keys = await testSigningKeySet();
    const tokens = new AccessTokens(keys, ISSUER, AUDIENCE, 60);
    const authorizer = createMcpAuthorizer({ tokens, sessions, resourceMetadataUrl: `${ISSUER}.well-known/oauth-protected-resource` });
    const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
    return { sessions, keys, tokens, authorizer, bearer };
  }

  it('a token of ours whose session was revoked or expired names that session; the refusal stays a 401 challenge', async () => {
    const { sessions, tokens, authorizer, bearer } = await setUp();
    const revoked = await openSession(sessions);
    const { token: revokedToken } = await tokens.issue(revoked);
    await sessions.revoke(revoked.id, 'test');
    const refusedRevoked = await authorizer.authenticate(bearer(revokedToken));
    expect(refusedRevoked).toMatchObject({
      ok: false,
      status: 401,
      reason: 'session_revoked',
      endedSession: { sessionId: revoked.id, subject: 'alice', clientId: 'client-1' },
    });
    expect((refusedRevoked as { headers: Record<string, string> }).headers['WWW-Authenticate']).toMatch(
      /^Bearer resource_metadata=.*error="invalid_token"/,
    );

    // Tokens never outlive their session: every token of an expired session is past its exp as well.
    const expired = await sessions.open({ ...(await openSession(sessions)), expiresAt: Date.now() - 1_000 });
    const { token: expiredToken } = await tokens.issue(expired, Date.now() - 30_000);
    expect(await authorizer.authenticate(bearer(expiredToken))).toMatchObject({
      ok: false,
      status: 401,
      reason: 'session_expired',
      endedSession: { sessionId: expired.id },
    });
  });

  it('an expired access token of an open session is not an ended session: refused for a refresh, naming no session', async () => {
    const { sessions, tokens, authorizer, bearer } = await setUp();
    const session = await openSession(sessions);
    const { token } = await tokens.issue(session, Date.now() - 120_000);
    const refused = await authorizer.authenticate(bearer(token));
    expect(refused).toMatchObject({ ok: false, status: 401, reason: 'token_expired' });
    expect(refused).not.toHaveProperty('endedSession');
  });

  it('requests with no usable token name no session and are counted by reason', async () => {
    const { sessions, authorizer, bearer } = await setUp();
    const session = await openSession(sessions);
    await sessions.revoke(session.id, 'test');
    // Signed by another key (not this gateway's), for a revoked session: it identifies nothing.
    const foreign = await new AccessTokens(await testSigningKeySet(), ISSUER, AUDIENCE, 60).issue(session);
    // Ours, but for another resource.
    const { keys } = await setUp();
    const elsewhere = await new AccessTokens(keys, ISSUER, 'http://127.0.0.1:9/other', 60).issue(session);
    const answers = [
      await authorizer.authenticate({ headers: {} }),
      await authorizer.authenticate({ headers: { authorization: 'Basic abc' } }),
      await authorizer.authenticate(bearer('not.a.jwt')),
      await authorizer.authenticate(bearer(foreign.token)),
      await authorizer.authenticate(bearer(elsewhere.token)),
    ];
    expect(answers.map((answer) => (answer.ok ? 'ok' : answer.reason))).toEqual([
      'no_token',
      'malformed_header',
      'invalid_token',
      'invalid_token',
      'invalid_token',
    ]);
    for (const answer of answers) expect(answer).not.toHaveProperty('endedSession');
    expect(authorizer.refusals()).toEqual({
      no_token: 1,
      malformed_header: 1,
      invalid_token: 3,
      token_expired: 0,
      session_revoked: 0,
      session_expired: 0,
    });
  });
});
