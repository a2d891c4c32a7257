/**
 * Calls `/mcp` refuses before the SDK sees them, still decided and receipted through the one pipeline: a tool
 * changed since the person approved it (the authorizer's step-up challenge), and a call on a token of a session
 * that has ended (the authorizer's 401).
 */
import type { CallDecision, CallPipeline } from '../calls/pipeline.js';
import type { McpAuthentication, McpAuthorizer, McpCaller } from '../calls/caller.js';
import { toolsCallOf } from './json-rpc.js';

export interface CallRefusals {
  /** At once (no promise) when there is nothing to check: not a `tools/call`, or no challenge to answer with. */
  staleApprovalRefusal(body: unknown, caller: McpCaller): StaleApprovalCheck | Promise<StaleApprovalCheck>;
  receiptCallOnEndedSession(body: unknown, caller: McpCaller): Promise<void>;
}

export type StaleApprovalCheck =
  | { refusal: McpAuthentication & { ok: false } }
  | { refusal: undefined; decision: CallDecision | undefined };

const NOTHING_TO_CHECK: StaleApprovalCheck = Object.freeze({ refusal: undefined, decision: undefined });

export function createCallRefusals(authorizer: McpAuthorizer, pipeline: CallPipeline): CallRefusals {
  /**
   * Re-approval (docs/authorization.md): when the decision answers "a person must act first: approve again"
   * (the operation changed since the person approved it), this is that answer's encoding: the authorizer's
   * step-up challenge (403 insufficient_scope) at the HTTP layer, which SDK clients answer by authorizing
   * again. Any other decision (or an authorizer without such a challenge: then the in-band "approve it again"
   * refusal stays) is handed on, so the fast path does not decide the same call twice.
   */
  function staleApprovalRefusal(body: unknown, caller: McpCaller): StaleApprovalCheck | Promise<StaleApprovalCheck> {
    if (!authorizer.challengeStaleApproval) return NOTHING_TO_CHECK;
    const call = toolsCallOf(body);
    if (!call) return NOTHING_TO_CHECK;
    // The one pipeline decides (core policy); a plain call is decided at once, so nothing here waits for it.
    const deciding = pipeline.decide(caller, call.name, call.argumentsValue, call.requestState);
    return deciding instanceof Promise
      ? deciding.then((decision) => challengeIfStale(call, caller, decision))
      : challengeIfStale(call, caller, deciding);
  }

  /** A "re-approve" answer is encoded as the challenge and receipted like every other answer (`action-required`). */
  function challengeIfStale(
    call: NonNullable<ReturnType<typeof toolsCallOf>>,
    caller: McpCaller,
    decision: CallDecision,
  ): StaleApprovalCheck | Promise<StaleApprovalCheck> {
    const { verdict } = decision;
    if (verdict.kind !== 'act' || verdict.action.kind !== 'reapprove') return { refusal: undefined, decision };
    // Durable when refuse returns; the challenge need not wait for the database.
    void pipeline.refuse(caller, decision, call.argumentsValue);
    return authorizer.challengeStaleApproval!(caller, [call.name]).then((refusal) => ({ refusal }));
  }

  /**
   * A `tools/call` whose token this gateway issued for a session that has ended (revoked or expired): the
   * client gets the authorizer's 401 (MCP › Authorization: invalid or expired tokens get 401), and the call
   * is still decided and receipted as denied (SESSION_REVOKED / SESSION_EXPIRED) through the one pipeline,
   * with its event. Other methods on such a token, and requests without a usable token, leave no receipt.
   */
  async function receiptCallOnEndedSession(body: unknown, caller: McpCaller): Promise<void> {
    const call = toolsCallOf(body);
    if (!call) return;
    const decision = await pipeline.decide(caller, call.name);
    // The session has ended, so the decision refuses; durable when refuse returns.
    if (decision.verdict.kind !== 'allow') void pipeline.refuse(caller, decision, call.argumentsValue);
  }

  return { staleApprovalRefusal, receiptCallOnEndedSession };
}
