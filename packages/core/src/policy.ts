/**
 * Whether one tool call may run: plain data in, a verdict out, with three answers: allow, deny (with a
 * reason), or a person must act first (what kind, what to show, where). The server gathers the facts (the
 * caller's session, the tool as the in-use publication has it, drift, the logins the operation can use, the
 * retry's `requestState` and what a person still has to do for these arguments) and every /mcp path and source
 * kind asks this one function. The reasons are registered error codes (docs/errors.md); receipts record them.
 */
import type { RequestStateRefusal } from './request-state.js';

export type CallDenialReason =
  | 'TOOL_UNKNOWN'
  | 'TOOL_NOT_IN_SESSION'
  | 'TOOL_CHANGED_SINCE_APPROVAL'
  | 'TOOL_BLOCKED_BY_DRIFT'
  | 'SESSION_REVOKED'
  | 'SESSION_EXPIRED'
  | 'LOGIN_NOT_IN_SESSION'
  | RequestStateRefusal
  | 'REQUEST_STATE_USED'
  | 'CALL_APPROVAL_UNAVAILABLE'
  | 'CALL_APPROVAL_DENIED';

/** Why a person must act before the call may run (registered codes; the receipt's reason). */
export type PersonActionReason = 'TOOL_CHANGED_SINCE_APPROVAL' | 'PERSON_ACTION_REQUIRED';

/**
 * What a person must do first. `reapprove`: approve the changed tool again at the authorization server (the
 * OAuth step-up challenge leads the client there). `visit`: open `url`, a page of the gateway's own (connect an
 * account, approve this call), signed in as the session's person; the client retries afterwards.
 */
export type PersonAction = { kind: 'reapprove' } | { kind: 'visit'; url: string };

/** Something a person still has to do for this call, as a gate found it (OAuth per person, approvals…). */
export interface PendingPersonAction {
  reason: 'PERSON_ACTION_REQUIRED';
  /** What to show the person. */
  message: string;
  /** Where: the page that completes the action. */
  url: string;
}

/** Where a session stands: `open`, or ended by a revocation or by its time limit. */
export type SessionState = 'open' | 'revoked' | 'expired';

export interface CallFacts {
  /** The tool name the client asked for. */
  toolName: string;
  /** `state` as the store read it; `expiresAt` (epoch ms) also ends an `open` session once `now` reaches it. */
  session: { id: string; state: SessionState; expiresAt: number };
  /** Epoch milliseconds now. */
  now: number;
  /**
   * The tool in the caller's snapshot; undefined when no in-use publication offers it. `approval`: the review
   * choice `each-call` (docs/approvals.md), when the publication has it.
   */
  tool?: { fingerprint: string; operationName: string; approval?: 'each-call' };
  /** The fingerprint the person approved for this name in this session; undefined when not in the session. */
  approvedFingerprint?: string;
  /** Why drift blocks the tool, when it does. */
  driftReason?: string;
  /**
   * The configured alternatives of the operation's security (`loginAlternativesOf`); undefined or empty when
   * none is configured (the executor then reports it).
   */
  loginAlternatives?: ReadonlyArray<{ logins: readonly string[] }>;
  /** Login ids the person allowed this session to use. */
  grantedLogins: ReadonlySet<string>;
  /** The retry's `requestState`, when it carried one, as checked (core/request-state.ts, then single use). */
  requestState?: { ok: true } | { ok: false; reason: RequestStateRefusal | 'REQUEST_STATE_USED'; message: string };
  /** What a person must still do for this call with these arguments; undefined when nothing. */
  pendingAction?: PendingPersonAction;
  /** What a person decided about this very call (an `each-call` tool: the approvals gate found the decision). */
  callApproval?: 'approved' | 'denied';
}

export type CallVerdict =
  | { kind: 'allow' }
  | { kind: 'deny'; reason: CallDenialReason; message: string }
  | { kind: 'act'; reason: PersonActionReason; message: string; action: PersonAction };

const ALLOWED: CallVerdict = Object.freeze({ kind: 'allow' });
const REAPPROVE: PersonAction = Object.freeze({ kind: 'reapprove' });

/** One alternative of an operation's security whose every scheme has a configured credential. */
export interface LoginAlternative {
  /** The alternative's security schemes, sorted. */
  schemes: string[];
  /** The login ids it needs (`<source>/<scheme>`, schemes of type `none` left out): `[]` needs none. */
  logins: string[];
}

/** A login id: `<source>/<securityScheme>`. */
export function loginIdOf(sourceName: string, schemeName: string): string {
  return `${sourceName}/${schemeName}`;
}

/**
 * The scheme name an MCP source's login takes: an MCP source has no security schemes, so its one per-person
 * login (`credentials: { type: oauthPerson }`) is `<source>/mcp`, granted at consent like any other login.
 */
export const MCP_LOGIN_SCHEME = 'mcp';

/**
 * The login alternatives of an MCP source's tools: its per-person login when the source's credential is
 * `oauthPerson`; otherwise one alternative needing no login (the source's credential is the gateway's own).
 */
export function mcpLoginAlternatives(sourceName: string, credential: { type: string } | undefined): LoginAlternative[] {
  if (credential?.type !== 'oauthPerson') return [{ schemes: [], logins: [] }];
  return [{ schemes: [MCP_LOGIN_SCHEME], logins: [loginIdOf(sourceName, MCP_LOGIN_SCHEME)] }];
}

/**
 * The configured alternatives of an operation's security, in the document's order. OpenAPI: an empty
 * `security` array means no security (one alternative needing nothing); an alternative naming a scheme without
 * a configured credential cannot be used and is left out.
 */
export function loginAlternativesOf<R extends Readonly<Record<string, unknown>>>(
  sourceName: string,
  security: readonly R[],
  credentialTypes: Readonly<Record<string, { type: string }>>,
): Array<LoginAlternative & { requirement: R }> {
  const alternatives: Array<LoginAlternative & { requirement: R }> = [];
  for (const requirement of security.length === 0 ? [{} as R] : security) {
    const schemes = Object.keys(requirement).sort();
    if (!schemes.every((scheme) => Object.hasOwn(credentialTypes, scheme))) continue;
    const logins = schemes.filter((scheme) => credentialTypes[scheme]!.type !== 'none').map((scheme) => loginIdOf(sourceName, scheme));
    alternatives.push({ schemes, logins, requirement });
  }
  return alternatives;
}

/**
 * The login-choice rule, the one the decision, the executor's credentials and consent all use: the first
 * configured alternative whose every login the session was granted. `chosen` undefined: none is usable, and
 * `missing` names the logins of the first alternative (empty when no alternative is configured at all).
 */
export function chooseLoginAlternative<T extends { logins: readonly string[] }>(
  alternatives: readonly T[],
  granted: ReadonlySet<string>,
): { chosen: T; missing?: undefined } | { chosen?: undefined; missing: string[] } {
  // On every call (the decision and the credential resolver): the granted case allocates no list.
  for (const alternative of alternatives) if (hasEvery(alternative.logins, granted)) return { chosen: alternative };
  const first = alternatives[0];
  return { missing: first ? first.logins.filter((id) => !granted.has(id)) : [] };
}

function hasEvery(logins: readonly string[], granted: ReadonlySet<string>): boolean {
  for (const id of logins) if (!granted.has(id)) return false;
  return true;
}

/**
 * The rules, in the order a refusal is reported (the first that fails names the reason). An ended session
 * comes first: it may no longer learn anything about tools, and its receipt says why it ended.
 */
export function decideCall(facts: CallFacts): CallVerdict {
  const name = facts.toolName;
  const { session } = facts;
  if (session.state === 'revoked') {
    return { kind: 'deny', reason: 'SESSION_REVOKED', message: `session ${session.id} was revoked; sign in again` };
  }
  if (session.state === 'expired' || session.expiresAt <= facts.now) {
    return {
      kind: 'deny',
      reason: 'SESSION_EXPIRED',
      message: `session ${session.id} has expired (its time limit passed); sign in again`,
    };
  }
  if (!facts.tool) return { kind: 'deny', reason: 'TOOL_UNKNOWN', message: `Unknown tool: ${name}` };
  if (facts.approvedFingerprint === undefined) {
    return { kind: 'deny', reason: 'TOOL_NOT_IN_SESSION', message: `Unknown tool: ${name} (not in this session)` };
  }
  if (facts.approvedFingerprint !== facts.tool.fingerprint) {
    // A person must act: approve the changed operation again (the step-up challenge, docs/authorization.md).
    return {
      kind: 'act',
      reason: 'TOOL_CHANGED_SINCE_APPROVAL',
      message:
        `tool ${name} changed since it was approved for this ` +
        `session (fingerprint ${facts.approvedFingerprint} → ${facts.tool.fingerprint}); approve it again`,
      action: REAPPROVE,
    };
  }
  if (facts.driftReason !== undefined) {
    return {
      kind: 'deny',
      reason: 'TOOL_BLOCKED_BY_DRIFT',
      message:
        `tool ${name} is blocked by drift: ${facts.driftReason}. It stays unavailable until the description matches the published ` +
        `operation again or a new publication is approved.`,
    };
  }
  const alternatives = facts.loginAlternatives;
  if (alternatives && alternatives.length > 0) {
    const choice = chooseLoginAlternative(alternatives, facts.grantedLogins);
    if (!choice.chosen) {
      return {
        kind: 'deny',
        reason: 'LOGIN_NOT_IN_SESSION',
        message:
          `cannot call ${name}: calling ${facts.tool.operationName} needs the login ${choice.missing.join(' and ')}, which this ` +
          `session was not granted (LOGIN_NOT_IN_SESSION)`,
      };
    }
  }
  // A retry must carry back exactly the state it was given: a forged, expired or spent one is refused.
  if (facts.requestState && !facts.requestState.ok) {
    return { kind: 'deny', reason: facts.requestState.reason, message: facts.requestState.message };
  }
  if (facts.tool.approval === 'each-call' && facts.callApproval === 'denied') {
    return { kind: 'deny', reason: 'CALL_APPROVAL_DENIED', message: `a person denied this call of ${name}; it did not run` };
  }
  const pending = facts.pendingAction;
  if (pending) return { kind: 'act', reason: pending.reason, message: pending.message, action: { kind: 'visit', url: pending.url } };
  // An each-call tool never runs unapproved: when nothing could ask a person (no approvals gate), it is refused.
  if (facts.tool.approval === 'each-call' && facts.callApproval !== 'approved') {
    return {
      kind: 'deny',
      reason: 'CALL_APPROVAL_UNAVAILABLE',
      message: `tool ${name} runs only once a person approves each call, and this gateway cannot ask for approvals`,
    };
  }
  return ALLOWED;
}
