/**
 * Calls `/mcp` refuses before the SDK sees them, still decided and receipted through the one pipeline: a tool
 * changed since the person approved it (the authorizer's step-up challenge), and a call on a token of a session
 * that has ended (the authorizer's 401).
 */
import type { CallDecision, CallPipeline } from '../calls/pipeline.js';
import type { McpAuthentication, McpAuthorizer, McpCaller } from '../calls/caller.js';
import { toolsCallOf } from './json-rpc.js';

export interface CallRefusals {
  staleApprovalRefusal(
    body: unknown,
    caller: McpCaller,
  ): Promise<{ refusal: McpAuthentication & { ok: false } } | { refusal: undefined; decision: CallDecision | undefined }>;
  receiptCallOnEndedSession(body: unknown, caller: McpCaller): Promise<void>;
}

export function createCallRefusals(authorizer: McpAuthorizer, pipeline: CallPipeline): CallRefusals {
  /**
   * Re-approval (docs/authorization.md): when the decision answers "a person must act first: approve again"
   * (the operation changed since the person approved it), this is that answer's encoding: the authorizer's
   * step-up challenge (403 insufficient_scope) at the HTTP layer, which SDK clients answer by authorizing
   * again. Any other decision (or an authorizer without such a challenge: then the in-band "approve it again"
   * refusal stays) is handed on, so the fast path does not decide the same call twice.
   */
  async function staleApprovalRefusal(
    body: unknown,
    caller: McpCaller,
  ): Promise<{ refusal: McpAuthentication & { ok: false } } | { refusal: undefined; decision: CallDecision | undefined }> {
    if (!authorizer.challengeStaleApproval) return { refusal: undefined, decision: undefined };
    const call = toolsCallOf(body);
    if (!call) return { refusal: undefined, decision: undefined };
    // The one pipeline decides (core policy); a "re-approve" answer is encoded as the challenge and receipted
    // like every other answer (`action-required`).
    const decision = await pipeline.decide(caller, call.name, call.argumentsValue, call.requestState);
    const { verdict } = decision;
    if (verdict.kind !== 'act' || verdict.action.kind !== 'reapprove') return { refusal: undefined, decision };
    // Durable when refuse returns; the challenge need not wait for the database.
    void pipeline.refuse(caller, decision, call.argumentsValue);
    return { refusal: await authorizer.challengeStaleApproval(caller, [call.name]) };
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
