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

/** The result of authenticating one /mcp request. */
export type McpAuthentication =
  | { ok: true; caller: McpCaller }
  | {
      ok: false;
      /** HTTP status (401 or 403) and the headers to send, e.g. `WWW-Authenticate`. */
      status: number;
      headers: Record<string, string>;
      body: unknown;
    };

/** Plugged into the app by whoever owns authorization. */
export interface McpAuthorizer {
  authenticate(request: { headers: Record<string, string | string[] | undefined> }): Promise<McpAuthentication>;
  /** Re-checked at call time: false once the session was revoked or expired. */
  isSessionOpen(sessionId: string): boolean;
  /**
   * The refusal for a call to tools whose operation changed since the person approved them: the OAuth
   * step-up challenge that leads the client back to consent (docs/authorization.md › Re-approval).
   * Optional: without it such a call is refused in-band only ("approve it again").
   */
  /** Optional: told when a session is revoked in this process, so its notification streams end at once. */
  onSessionEnded?(listener: (sessionId: string) => void): () => void;
  challengeStaleApproval?(caller: McpCaller, toolNames: readonly string[]): McpAuthentication & { ok: false };
}
