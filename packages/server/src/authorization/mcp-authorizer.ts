import type { McpAuthentication, McpAuthorizer, McpCaller, McpRefusalReason } from '../calls/caller.js';
import { TokenRejected, type AccessTokenClaims, type AccessTokens } from './oauth/tokens.js';
import { toolScope } from './consent/reapproval.js';
import type { SessionRecord, SessionState, Sessions } from './stores/ports.js';

/** Quoted-string safe text for a WWW-Authenticate parameter (RFC 9110 §11.2 / RFC 6750 §3). */
function quoted(text: string): string {
  return text.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, ' ');
}

/**
 * Builds the 401 challenge: `resource_metadata` (RFC 9728 §5.1) always, so a client without a token can
 * discover where to get one; `error` only when a token was presented (RFC 6750 §3.1).
 */
export function bearerChallenge(resourceMetadataUrl: string, error?: { code: string; description: string; scope?: string }): string {
  const parameters = [`resource_metadata="${quoted(resourceMetadataUrl)}"`];
  if (error) parameters.push(`error="${error.code}"`, `error_description="${quoted(error.description)}"`);
  if (error?.scope) parameters.push(`scope="${quoted(error.scope)}"`);
  return `Bearer ${parameters.join(', ')}`;
}

/** Refused /mcp requests by reason since the process started (zero for reasons not seen yet). */
export type McpRefusalCounts = Record<McpRefusalReason, number>;

const REFUSAL_REASONS: readonly McpRefusalReason[] = [
  'no_token',
  'malformed_header',
  'invalid_token',
  'token_expired',
  'session_revoked',
  'session_expired',
];

/**
 * The /mcp gatekeeper: a bearer token from the Authorization header only (never the query string, MCP ›
 * Access Token Usage), verified as ours and for this resource, whose session is open and unexpired.
 * Sessions are parsed once and cached; where one stands is read from the session store once per turn of the
 * event loop (a primary-key lookup), so `gateway sessions revoke` from another process takes effect on the
 * next request, and a revocation in this process at once. The call-time re-check (`sessionState`, which the
 * call pipeline needs synchronously) answers from the state read this turn or, failing that, the last one
 * read, and reads it again in the background: a session found ended then ends its notification streams.
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
}): McpAuthorizer & { forget(sessionId: string): void; refusals(): McpRefusalCounts } {
  const { tokens, sessions, resourceMetadataUrl } = options;
  const callers = new Map<string, McpCaller>();
  const refusalCounts = Object.fromEntries(REFUSAL_REASONS.map((reason) => [reason, 0])) as McpRefusalCounts;
  // Where a session stands, as read in the current turn of the event loop: the token check and the call
  // decision of one request read it once, not twice (about 2 % of a call's CPU). Cleared at the end of the
  // turn, and at once for a session revoked in this process.
  let statesThisTurn: Map<string, Promise<SessionState | undefined>> | undefined;
  // The last state read of each session (for the synchronous call-time re-check); undefined: not in the store.
  const lastStates = new Map<string, SessionState | undefined>();
  const endedListeners = new Set<(sessionId: string) => void>();
  const ended = (sessionId: string): void => {
    for (const listener of endedListeners) listener(sessionId);
  };
  sessions.onRevoke((sessionId) => {
    callers.delete(sessionId);
    statesThisTurn?.delete(sessionId);
    lastStates.set(sessionId, 'revoked');
    ended(sessionId);
  });
  /** undefined: a session this gateway's store does not know. */
  function stateOf(sessionId: string): Promise<SessionState | undefined> {
    if (!statesThisTurn) {
      statesThisTurn = new Map();
      setImmediate(() => {
        statesThisTurn = undefined;
      });
    }
    const known = statesThisTurn.get(sessionId);
    if (known) return known;
    const read = sessions.state(sessionId).then((state) => {
      const before = lastStates.get(sessionId);
      if (lastStates.size > 10_000) lastStates.clear();
      lastStates.set(sessionId, state);
      if (state !== 'open') {
        callers.delete(sessionId);
        // Ended behind this process's back (another process, the CLI): its streams end too.
        if (before === 'open') ended(sessionId);
      }
      return state;
    });
    statesThisTurn.set(sessionId, read);
    return read;
  }

  function refuse(
    reason: McpRefusalReason,
    code: string | undefined,
    description: string,
    endedSession?: McpCaller,
  ): McpAuthentication & { ok: false } {
    refusalCounts[reason] += 1;
    return {
      ok: false,
      status: 401,
      headers: { 'WWW-Authenticate': bearerChallenge(resourceMetadataUrl, code ? { code, description } : undefined) },
      body: code ? { error: code, error_description: description } : { error: 'unauthorized', error_description: description },
      reason,
      ...(endedSession ? { endedSession } : {}),
    };
  }

  function callerOf(session: SessionRecord): McpCaller {
    return {
      sessionId: session.id,
      subject: session.subject,
      clientId: session.clientId,
      tools: new Map(session.tools.map((tool) => [tool.name, tool.fingerprint])),
      logins: new Set(session.logins),
      expiresAt: session.expiresAt,
    };
  }

  async function callerFor(sessionId: string): Promise<McpCaller | undefined> {
    const cached = callers.get(sessionId);
    if (cached) return cached;
    const session = await sessions.find(sessionId);
    if (!session) return undefined;
    const caller = callerOf(session);
    if (callers.size > 10_000) callers.clear();
    callers.set(sessionId, caller);
    return caller;
  }

  /** The token must belong to the session it names: same client, same person. */
  function belongsTo(caller: McpCaller | undefined, claims: AccessTokenClaims): caller is McpCaller {
    return caller !== undefined && caller.clientId === claims.client_id && caller.subject === claims.sub;
  }

  /**
   * A token of ours naming a session that is not open: revoked or expired, the refusal names the session's
   * caller (not cached: ended sessions are not called on often), so its `tools/call` is receipted as denied.
   */
  async function refuseEndedSession(
    claims: AccessTokenClaims,
    state: SessionState | undefined,
    mismatch = 'the token does not match its session',
  ): Promise<McpAuthentication & { ok: false }> {
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
  async function refuseExpiredToken(token: string, description: string): Promise<McpAuthentication & { ok: false }> {
    let claims: AccessTokenClaims;
    try {
      claims = await tokens.verify(token, { ignoreExpiry: true });
    } catch (error) {
      if (error instanceof TokenRejected) return refuse('invalid_token', 'invalid_token', error.message);
      throw error;
    }
    const state = await stateOf(claims.sid);
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
      const state = await stateOf(claims.sid);
      if (state !== 'open') return refuseEndedSession(claims, state);
      // A cached caller costs no further await.
      const caller = callers.get(claims.sid) ?? (await callerFor(claims.sid));
      if (!belongsTo(caller, claims)) return refuse('invalid_token', 'invalid_token', 'the token does not match its session');
      return { ok: true, caller };
    },
    sessionState(sessionId) {
      // The call of a request whose token check read the state this turn, or else the last state read (the
      // token check of the same request); read again in the background for the next re-check. A session the
      // store does not know, or never read, cannot be called on: it reads as revoked.
      if (!statesThisTurn?.has(sessionId)) stateOf(sessionId).catch(() => undefined);
      return lastStates.get(sessionId) ?? 'revoked';
    },
    onSessionEnded(listener) {
      endedListeners.add(listener);
      return () => endedListeners.delete(listener);
    },
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
    forget(sessionId) {
      callers.delete(sessionId);
    },
    refusals() {
      return { ...refusalCounts };
    },
  };
}
