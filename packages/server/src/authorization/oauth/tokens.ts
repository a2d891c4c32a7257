import { randomUUID } from 'node:crypto';
import { errors as joseErrors, decodeProtectedHeader, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import type { SessionRecord } from '../stores/sessions.js';
import { ACCESS_TOKEN_ALGORITHM, type SigningKeySet } from './signing-keys.js';

/** RFC 9068 §2.1: the media type of JWT access tokens, sent as the `typ` header. */
export const ACCESS_TOKEN_TYPE = 'at+jwt';

export interface AccessTokenClaims extends JWTPayload {
  iss: string;
  sub: string;
  aud: string;
  client_id: string;
  sid: string;
  jti: string;
  iat: number;
  exp: number;
}

/** Why a presented token was refused; becomes `error_description` in the challenge. */
export class TokenRejected extends Error {
  /** `isExpired`: the token is ours and intact, only past its `exp` (the authorizer then asks why). */
  constructor(
    message: string,
    readonly isExpired = false,
  ) {
    super(message);
  }
}

/** Most verified tokens remembered at once (a client reuses its token for every /mcp request). */
const VERIFIED_CACHE_LIMIT = 10_000;

/**
 * Access tokens are short-lived JWTs (RFC 9068) signed with the vault's current key. Their `aud` is the
 * canonical /mcp URL (RFC 8707, MCP › Token Audience Binding) and they never outlive their session.
 */
export class AccessTokens {
  /**
   * Tokens that already passed `verify`, by their exact text: an EdDSA verification costs more than the
   * rest of an /mcp request's own work, and a client sends the same token on every request. A hit is
   * only honoured while its signing key is still published and before its `exp`, the two things that can
   * change for a token whose bytes (signature included) are identical; sessions are checked separately on
   * every request by the authorizer.
   */
  private readonly verified = new Map<string, { claims: AccessTokenClaims; kid: string }>();

  constructor(
    private readonly keys: SigningKeySet,
    private readonly issuer: string,
    private readonly audience: string,
    private readonly lifetimeSeconds: number,
  ) {}

  async issue(session: SessionRecord, now = Date.now()): Promise<{ token: string; expiresIn: number }> {
    const issuedAt = Math.floor(now / 1000);
    // exp never past the session's end (floor: a token must not outlive it even by a fraction of a second).
    const expiresAt = Math.min(issuedAt + this.lifetimeSeconds, Math.floor(session.expiresAt / 1000));
    const token = await new SignJWT({ client_id: session.clientId, sid: session.id })
      .setProtectedHeader({ alg: ACCESS_TOKEN_ALGORITHM, typ: ACCESS_TOKEN_TYPE, kid: this.keys.current.kid })
      .setIssuer(this.issuer)
      .setSubject(session.subject)
      .setAudience(this.audience)
      .setJti(randomUUID())
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .sign(this.keys.current.privateKey);
    return { token, expiresIn: Math.max(0, expiresAt - issuedAt) };
  }

  /** RFC 9068 §4: signature with a known key, `typ`, `iss`, `aud`, `exp`, and the claims we rely on. */
  async verify(token: string, options: { ignoreExpiry?: boolean } = {}): Promise<AccessTokenClaims> {
    if (!options.ignoreExpiry) {
      const hit = this.verified.get(token);
      if (hit) {
        // jose's rule without clock tolerance: expired once `exp` <= now (seconds).
        if (hit.claims.exp > Math.floor(Date.now() / 1000) && this.keys.byKid(hit.kid)) return hit.claims;
        this.verified.delete(token);
      }
    }
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw new TokenRejected('the token is not a JWT');
    }
    // A kid this process does not know may be a key another replica rotated in since this one read the vault.
    const key = kid ? (this.keys.byKid(kid) ?? (await this.keys.reloadFor(kid))) : undefined;
    if (!key) throw new TokenRejected('the token was not signed by this gateway');
    try {
      const { payload } = await jwtVerify(token, key.publicKey, {
        algorithms: [ACCESS_TOKEN_ALGORITHM],
        typ: ACCESS_TOKEN_TYPE,
        issuer: this.issuer,
        audience: this.audience,
        requiredClaims: ['sub', 'client_id', 'sid', 'jti', 'exp', 'iat'],
        ...(options.ignoreExpiry ? { clockTolerance: 100 * 365 * 86400 } : {}),
      });
      const claims = payload as AccessTokenClaims;
      if (!options.ignoreExpiry) {
        if (this.verified.size >= VERIFIED_CACHE_LIMIT) this.verified.clear();
        this.verified.set(token, { claims, kid: key.kid });
      }
      return claims;
    } catch (error) {
      throw new TokenRejected(describeJoseError(error), error instanceof joseErrors.JWTExpired);
    }
  }
}

function describeJoseError(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return 'the token has expired';
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'the token signature is invalid';
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return 'the token was issued by another authorization server';
    if (error.claim === 'aud') return 'the token is not meant for this resource';
    if (error.claim === 'typ') return 'the token is not an access token (typ at+jwt)';
    return `the token's ${error.claim} claim is invalid`;
  }
  return 'the token is invalid';
}
