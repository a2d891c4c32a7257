import type { SessionState } from '@gateway/core';

/**
 * Who is calling /mcp, as decided by the authorization layer (the OAuth plugin in production; only the test
 * harness may supply anything else). The MCP layer enforces it on every request.
 */
export interface McpCaller {
  /** `session-<n>`. */
  sessionId: string;
  /** The person (subject) the session belongs to. */
  subject: string;
  clientId: string;
  /** Tool name → the operation fingerprint the person approved. Only these tools are listed or callable. */
  tools: ReadonlyMap<string, string>;
  /** Login ids (`<source>/<securityScheme>`) the person allowed this session to use. */
  logins: ReadonlySet<string>;
  /** Epoch milliseconds when the session ends. */
  expiresAt: number;
}

/**
 * Why a request was refused before it reached MCP (docs/authorization.md › Refused requests): no token, a
 * header that is not `Bearer <token>`, a token this gateway did not issue for /mcp (or that does not match
 * its session), an access token past its `exp` while its session is still open (the client refreshes), or
 * a token the gateway issued whose session was revoked or has expired.
 */
export type McpRefusalReason = 'no_token' | 'malformed_header' | 'invalid_token' | 'token_expired' | 'session_revoked' | 'session_expired';

/** The result of authenticating one /mcp request. */
export type McpAuthentication =
  | { ok: true; caller: McpCaller }
  | {
      ok: false;
      /** HTTP status (401 or 403) and the headers to send, e.g. `WWW-Authenticate`. */
      status: number;
      headers: Record<string, string>;
      body: unknown;
      /** Why (counted per reason; absent from authorizers that do not say). */
      reason?: McpRefusalReason;
      /**
       * The caller of a session that has ended, when the token names one this gateway issued (signature and
       * audience verified): a `tools/call` on it is still decided and receipted as denied (SESSION_REVOKED or
       * SESSION_EXPIRED), while the client gets this refusal. Never set for a token the gateway cannot verify.
       */
      endedSession?: McpCaller;
    };

/** Plugged into the app by whoever owns authorization. */
export interface McpAuthorizer {
  authenticate(request: { headers: Record<string, string | string[] | undefined> }): Promise<McpAuthentication>;
  /** Re-checked at call time: `revoked` or `expired` once the session has ended. */
  sessionState(sessionId: string): SessionState;
  /** Optional: told when a session is revoked in this process, so its notification streams end at once. */
  onSessionEnded?(listener: (sessionId: string) => void): () => void;
  /**
   * The refusal for a call to tools whose operation changed since the person approved them: the OAuth
   * step-up challenge that leads the client back to consent (docs/authorization.md › Re-approval).
   * Optional: without it such a call is refused in-band only ("approve it again").
   */
  challengeStaleApproval?(caller: McpCaller, toolNames: readonly string[]): Promise<McpAuthentication & { ok: false }>;
}
