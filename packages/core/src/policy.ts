/**
 * Whether one tool call may run: plain data in, a verdict out. The server gathers the facts (the caller's
 * session, the tool as the in-use publication has it, drift, the logins the operation can use) and every
 * /mcp path and source kind asks this one function. The reasons are registered error codes
 * (docs/errors.md); receipts record them.
 */

export type CallDenialReason =
  | 'TOOL_UNKNOWN'
  | 'TOOL_NOT_IN_SESSION'
  | 'TOOL_CHANGED_SINCE_APPROVAL'
  | 'TOOL_BLOCKED_BY_DRIFT'
  | 'SESSION_REVOKED'
  | 'SESSION_EXPIRED'
  | 'LOGIN_NOT_IN_SESSION';

/** Where a session stands: `open`, or ended by a revocation or by its time limit. */
export type SessionState = 'open' | 'revoked' | 'expired';

export interface CallFacts {
  /** The tool name the client asked for. */
  toolName: string;
  /** `state` as the store read it; `expiresAt` (epoch ms) also ends an `open` session once `now` reaches it. */
  session: { id: string; state: SessionState; expiresAt: number };
  /** Epoch milliseconds now. */
  now: number;
  /** The tool in the caller's snapshot; undefined when no in-use publication offers it. */
  tool?: { fingerprint: string; operationName: string };
  /** The fingerprint the person approved for this name in this session; undefined when not in the session. */
  approvedFingerprint?: string;
  /** Why drift blocks the tool, when it does. */
  driftReason?: string;
  /**
   * The login ids each configured alternative of the operation's security needs (`[]`: an alternative
   * needing none); undefined or empty when no alternative is configured (the executor then reports it).
   */
  loginAlternatives?: ReadonlyArray<readonly string[]>;
  /** Login ids the person allowed this session to use. */
  grantedLogins: ReadonlySet<string>;
}

export type CallVerdict = { allowed: true } | { allowed: false; reason: CallDenialReason; message: string };

const ALLOWED: CallVerdict = Object.freeze({ allowed: true });

/**
 * The rules, in the order a refusal is reported (the first that fails names the reason). An ended session
 * comes first: it may no longer learn anything about tools, and its receipt says why it ended.
 */
export function decideCall(facts: CallFacts): CallVerdict {
  const name = facts.toolName;
  const { session } = facts;
  if (session.state === 'revoked') {
    return { allowed: false, reason: 'SESSION_REVOKED', message: `session ${session.id} was revoked; sign in again` };
  }
  if (session.state === 'expired' || session.expiresAt <= facts.now) {
    return {
      allowed: false,
      reason: 'SESSION_EXPIRED',
      message: `session ${session.id} has expired (its time limit passed); sign in again`,
    };
  }
  if (!facts.tool) return { allowed: false, reason: 'TOOL_UNKNOWN', message: `Unknown tool: ${name}` };
  if (facts.approvedFingerprint === undefined) {
    return { allowed: false, reason: 'TOOL_NOT_IN_SESSION', message: `Unknown tool: ${name} (not in this session)` };
  }
  if (facts.approvedFingerprint !== facts.tool.fingerprint) {
    return {
      allowed: false,
      reason: 'TOOL_CHANGED_SINCE_APPROVAL',
      message:
        `tool ${name} changed since it was approved for this ` +
        `session (fingerprint ${facts.approvedFingerprint} → ${facts.tool.fingerprint}); approve it again`,
    };
  }
  if (facts.driftReason !== undefined) {
    return {
      allowed: false,
      reason: 'TOOL_BLOCKED_BY_DRIFT',
      message:
        `tool ${name} is blocked by drift: ${facts.driftReason}. It stays unavailable until the description matches the published ` +
        `operation again or a new publication is approved.`,
    };
  }
  const alternatives = facts.loginAlternatives;
  if (alternatives && alternatives.length > 0) {
    let firstMissing: string[] | undefined;
    for (const needed of alternatives) {
      const missing = needed.filter((id) => !facts.grantedLogins.has(id));
      if (missing.length === 0) return ALLOWED;
      firstMissing ??= missing;
    }
    return {
      allowed: false,
      reason: 'LOGIN_NOT_IN_SESSION',
      message:
        `cannot call ${name}: calling ${facts.tool.operationName} needs the login ${firstMissing!.join(' and ')}, which this ` +
        `session was not granted (LOGIN_NOT_IN_SESSION)`,
    };
  }
  return ALLOWED;
}
