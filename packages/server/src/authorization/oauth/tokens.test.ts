import { describe, expect, it } from 'vitest';
import type { SessionRecord } from '../stores/sessions.js';
import { testSigningKeySet } from '../../../test/support/signing-keys.js';
import { AccessTokens, TokenRejected } from './tokens.js';

const ISSUER = 'http://127.0.0.1:9/';
const AUDIENCE = 'http://127.0.0.1:9/mcp';

function session(expiresAt: number): SessionRecord {
  return { id: 'session-1', subject: 'alice', clientId: 'client-1', expiresAt } as SessionRecord;
}

describe('verified access tokens are remembered, never past what verification allows', () => {
  it('a token verified once is accepted again with the same claims', async () => {
    const tokens = new AccessTokens(await testSigningKeySet(), ISSUER, AUDIENCE, 600);
    const { token } = await tokens.issue(session(Date.now() + 600_000));
    const first = await tokens.verify(token);
    expect(await tokens.verify(token)).toEqual(first);
    expect(first).toMatchObject({ sid: 'session-1', sub: 'alice', client_id: 'client-1' });
  });

  it('a remembered token is refused once its exp has passed', async () => {
    // exp is whole seconds after a floored iat: a lifetime of 2 s leaves the token valid for 1 to 2 s, so the first
    // verification (which remembers it) meets an expired token only if a whole second passes in between (with 1 s,
    // a token issued in the last milliseconds of a second expired before it: a CI flake).
    const tokens = new AccessTokens(await testSigningKeySet(), ISSUER, AUDIENCE, 2);
    const { token } = await tokens.issue(session(Date.now() + 600_000));
    await tokens.verify(token);
    const deadline = Date.now() + 5_000;
    let refusal: unknown;
    while (Date.now() < deadline && refusal === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      refusal = await tokens.verify(token).then(
        () => undefined,
        (error: unknown) => error,
      );
    }
    expect(refusal).toBeInstanceOf(TokenRejected);
    expect((refusal as Error).message).toBe('the token has expired');
  });

  it('a remembered token is refused once its signing key is no longer published', async () => {
    const keys = await testSigningKeySet();
    const tokens = new AccessTokens(keys, ISSUER, AUDIENCE, 600);
    const { token } = await tokens.issue(session(Date.now() + 600_000));
    await tokens.verify(token);
    keys.drop(keys.current.kid);
    await expect(tokens.verify(token)).rejects.toThrow('the token was not signed by this gateway');
  });

  it('a forged variant of a remembered token is still refused (the cache is keyed by the exact text)', async () => {
    const tokens = new AccessTokens(await testSigningKeySet(), ISSUER, AUDIENCE, 600);
    const { token } = await tokens.issue(session(Date.now() + 600_000));
    await tokens.verify(token);
    const [header, payload, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'mallory' })).toString('base64url')}.${signature}`;
    await expect(tokens.verify(forged)).rejects.toThrow('the token signature is invalid');
  });
});
