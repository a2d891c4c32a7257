import type { McpAuthorizer, McpCaller } from '../calls/caller.js';
import { toolScope } from './consent/reapproval.js';
import { bearerChallenge, createMcpRefusals, type McpRefusal, type McpRefusalCounts } from './mcp-refusals.js';
import { callerOf, createMcpSessionCache } from './mcp-session-cache.js';
import { TokenRejected, type AccessTokenClaims, type AccessTokens } from './oauth/tokens.js';
import type { ChangeFeed } from '../store/changes.js';
import type { SessionState, Sessions } from './stores/ports.js';

export { bearerChallenge, type McpRefusalCounts } from './mcp-refusals.js';

/** The token must belong to the session it names: same client, same person. */
function belongsTo(caller: McpCaller | undefined, claims: AccessTokenClaims): caller is McpCaller {
  return caller !== undefined && caller.clientId === claims.client_id && caller.subject === claims.sub;
}

/**
 * The /mcp gatekeeper: a bearer token from the Authorization header only (never the query string, MCP ›
 * Access Token Usage), verified as ours and for this resource, whose session is open and unexpired. What it keeps
 * of sessions between requests (callers, where each stands this turn) is mcp-session-cache.ts.
 *
 * A refusal is counted by reason (`refusals()`, shown by `GET /admin/status`), never receipted here: only a
 * token this gateway issued (signature, issuer and audience verified) identifies a session, and when that
 * session has ended the refusal carries its caller, so the MCP layer receipts a `tools/call` through the call
 * pipeline (docs/authorization.md › Refused requests). Anything else leaves no receipt: a flood of made-up
 * tokens cannot fill the receipt log.
 */
export function createMcpAuthorizer(options: {
  tokens: AccessTokens;
  sessions: Sessions;
  resourceMetadataUrl: string;
  /** Sessions ended in other processes or replicas (`session-ended`): see mcp-session-cache.ts. */
  changes?: ChangeFeed;
  /** Reports a revocation that could not be announced (the others then see it on the session's next request). */
  onAnnounceError?: (sessionId: string, error: unknown) => void;
}): McpAuthorizer & { forget(sessionId: string): void; refusals(): McpRefusalCounts } {
  const { tokens, sessions, resourceMetadataUrl } = options;
  const cache = createMcpSessionCache(sessions, options.changes, options.onAnnounceError);
  const refusals = createMcpRefusals(resourceMetadataUrl);
  const refuse = refusals.refuse;

  /**
   * A token of ours naming a session that is not open: revoked or expired, the refusal names the session's
   * caller (not cached: ended sessions are not called on often), so its `tools/call` is receipted as denied.
   */
  async function refuseEndedSession(
    claims: AccessTokenClaims,
    state: SessionState | undefined,
    mismatch = 'the token does not match its session',
  ): Promise<McpRefusal> {
    const session = state === undefined ? undefined : await sessions.find(claims.sid);
    const caller = session ? callerOf(session) : undefined;
    if (state === undefined || state === 'open' || !belongsTo(caller, claims)) {
      return refuse('invalid_token', 'invalid_token', mismatch);
    }
    return state === 'revoked'
      ? refuse('session_revoked', 'invalid_token', `session ${claims.sid} was revoked`, caller)
      : refuse('session_expired', 'invalid_token', `session ${claims.sid} has expired`, caller);
  }

  /**
   * A token of ours past its `exp`. Tokens never outlive their session, so every token of an expired session
   * lands here: that is an ended session. A token expired while its session is still open is not: the
   * client refreshes it (RFC 6750 §3.1 `invalid_token`), and nothing is receipted.
   */
  async function refuseExpiredToken(token: string, description: string): Promise<McpRefusal> {
    let claims: AccessTokenClaims;
    try {
      claims = await tokens.verify(token, { ignoreExpiry: true });
    } catch (error) {
      if (error instanceof TokenRejected) return refuse('invalid_token', 'invalid_token', error.message);
      throw error;
    }
    const state = await cache.stateOf(claims.sid);
    if (state === 'open') return refuse('token_expired', 'invalid_token', description);
    // A token that names no session of its client and person: its expiry is all there is to say.
    return refuseEndedSession(claims, state, description);
  }

  return {
    async authenticate(request) {
      const header = request.headers.authorization;
      const value = Array.isArray(header) ? header[0] : header;
      if (!value) return refuse('no_token', undefined, 'this endpoint needs an access token from the gateway (see resource_metadata)');
      const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)$/i.exec(value.trim());
      if (!match) return refuse('malformed_header', 'invalid_request', 'the Authorization header must be "Bearer <token>"');
      let claims: AccessTokenClaims;
      try {
        claims = await tokens.verify(match[1]!);
      } catch (error) {
        if (!(error instanceof TokenRejected)) throw error;
        if (error.isExpired) return refuseExpiredToken(match[1]!, error.message);
        return refuse('invalid_token', 'invalid_token', error.message);
      }
      const state = await cache.stateOf(claims.sid);
      if (state !== 'open') return refuseEndedSession(claims, state);
      // A cached caller costs no further await.
      const caller = cache.cachedCaller(claims.sid) ?? (await cache.callerFor(claims.sid));
      if (!belongsTo(caller, claims)) return refuse('invalid_token', 'invalid_token', 'the token does not match its session');
      return { ok: true, caller };
    },
    sessionState(sessionId) {
      // The call of a request whose token check read the state this turn, or else the last state read (the
      // token check of the same request); read again in the background for the next re-check. A session the
      // store does not know, or never read, cannot be called on: it reads as revoked.
      if (!cache.hasStateThisTurn(sessionId)) cache.stateOf(sessionId).catch(() => undefined);
      return cache.lastState(sessionId) ?? 'revoked';
    },
    onSessionEnded: (listener) => cache.onSessionEnded(listener),
    async challengeStaleApproval(caller, toolNames) {
      // MCP › Scope Challenge Handling / RFC 6750 §3.1: 403 insufficient_scope naming every scope this
      // call needs; the client re-runs authorization with them and the person approves the tools again.
      const scope = [...new Set(toolNames)].sort().map(toolScope).join(' ');
      const description =
        `approve again: ${[...toolNames].join(', ')} changed since this session ` + `approved ${toolNames.length === 1 ? 'it' : 'them'}`;
      await sessions.requestReapproval(caller.sessionId, toolNames);
      return {
        ok: false,
        status: 403,
        headers: { 'WWW-Authenticate': bearerChallenge(resourceMetadataUrl, { code: 'insufficient_scope', description, scope }) },
        body: { error: 'insufficient_scope', error_description: description, scope },
      };
    },
    forget: (sessionId) => cache.forget(sessionId),
    refusals: () => refusals.counts(),
  };
}
