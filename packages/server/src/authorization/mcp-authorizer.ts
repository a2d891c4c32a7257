import type { McpAuthentication, McpAuthorizer, McpCaller } from '../calls/caller.js';
import { TokenRejected, type AccessTokens } from './oauth/tokens.js';
import { toolScope } from './consent/reapproval.js';
import type { Sessions } from './stores/sessions.js';

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

/**
 * The /mcp gatekeeper: a bearer token from the Authorization header only (never the query string, MCP ›
 * Access Token Usage), verified as ours and for this resource, whose session is open and unexpired.
 * Sessions are parsed once and cached; whether one is still open is read from the database once per turn of
 * the event loop (a primary-key lookup), so `gateway sessions revoke` from another process takes effect on the
 * next request, and a revocation in this process at once.
 */
export function createMcpAuthorizer(options: {
  tokens: AccessTokens;
  sessions: Sessions;
  resourceMetadataUrl: string;
}): McpAuthorizer & { forget(sessionId: string): void } {
  const { tokens, sessions, resourceMetadataUrl } = options;
  const callers = new Map<string, McpCaller>();
  // Whether a session is open, as read in the current turn of the event loop: the token check and the call
  // decision of one request read it once, not twice (about 2 % of a call's CPU). Cleared at the end of the
  // turn, and at once for a session revoked in this process.
  let openThisTurn: Map<string, boolean> | undefined;
  sessions.onRevoke((sessionId) => {
    callers.delete(sessionId);
    openThisTurn?.delete(sessionId);
  });
  function isOpen(sessionId: string): boolean {
    if (!openThisTurn) {
      openThisTurn = new Map();
      setImmediate(() => {
        openThisTurn = undefined;
      });
    }
    let state = openThisTurn.get(sessionId);
    if (state === undefined) {
      state = sessions.isOpen(sessionId);
      openThisTurn.set(sessionId, state);
    }
    return state;
  }

  function refuse(status: number, code: string | undefined, description: string): McpAuthentication {
    return {
      ok: false,
      status,
      headers: { 'WWW-Authenticate': bearerChallenge(resourceMetadataUrl, code ? { code, description } : undefined) },
      body: code ? { error: code, error_description: description } : { error: 'unauthorized', error_description: description },
    };
  }

  function callerFor(sessionId: string): McpCaller | undefined {
    const cached = callers.get(sessionId);
    if (cached) return cached;
    const session = sessions.find(sessionId);
    if (!session) return undefined;
    const caller: McpCaller = {
      sessionId: session.id,
      subject: session.subject,
      clientId: session.clientId,
      tools: new Map(session.tools.map((tool) => [tool.name, tool.fingerprint])),
      logins: new Set(session.logins),
      expiresAt: session.expiresAt,
    };
    if (callers.size > 10_000) callers.clear();
    callers.set(sessionId, caller);
    return caller;
  }

  return {
    async authenticate(request) {
      const header = request.headers.authorization;
      const value = Array.isArray(header) ? header[0] : header;
      if (!value) return refuse(401, undefined, 'this endpoint needs an access token from the gateway (see resource_metadata)');
      const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)$/i.exec(value.trim());
      if (!match) return refuse(401, 'invalid_request', 'the Authorization header must be "Bearer <token>"');
      let claims: Awaited<ReturnType<AccessTokens['verify']>>;
      try {
        claims = await tokens.verify(match[1]!);
      } catch (error) {
        if (error instanceof TokenRejected) return refuse(401, 'invalid_token', error.message);
        throw error;
      }
      if (!isOpen(claims.sid)) {
        callers.delete(claims.sid);
        return refuse(401, 'invalid_token', `session ${claims.sid} has ended or was revoked`);
      }
      const caller = callerFor(claims.sid);
      // The token must belong to the session it names: same client, same person.
      if (!caller || caller.clientId !== claims.client_id || caller.subject !== claims.sub) {
        return refuse(401, 'invalid_token', 'the token does not match its session');
      }
      return { ok: true, caller };
    },
    isSessionOpen(sessionId) {
      const open = isOpen(sessionId);
      if (!open) callers.delete(sessionId);
      return open;
    },
    onSessionEnded(listener) {
      return sessions.onRevoke(listener);
    },
    challengeStaleApproval(caller, toolNames) {
      // MCP › Scope Challenge Handling / RFC 6750 §3.1: 403 insufficient_scope naming every scope this
      // call needs; the client re-runs authorization with them and the person approves the tools again.
      const scope = [...new Set(toolNames)].sort().map(toolScope).join(' ');
      const description =
        `approve again: ${[...toolNames].join(', ')} changed since this session ` + `approved ${toolNames.length === 1 ? 'it' : 'them'}`;
      sessions.requestReapproval(caller.sessionId, toolNames);
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
  };
}
