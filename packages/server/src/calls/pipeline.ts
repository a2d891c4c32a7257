/**
 * The one path every governed tool call takes, whatever the /mcp era or path and, later, the source kind:
 * resolve the tool in the caller's snapshot → decide (./decision.ts, core `decideCall`) → execute → write the
 * receipt to the receipt journal (durable, ./receipting.ts) → answer; right after the answer, the receipt log
 * moves the receipt (and, through its hooks, its outbox rows) into the database in one transaction, shared with
 * every receipt written meanwhile (receipts/journal.ts). Refusals are receipted too. The wire mapping stays with
 * the MCP layer: this returns a protocol-neutral answer.
 */
import { GatewayError, type CallDenialReason, type CallVerdict, type Receipt, type ReceiptOutcome } from '@gateway/core';
import type { CancelSignal } from '@gateway/runtime';
import { createRequestStates, REQUEST_STATE_USED_MESSAGE, type RequestStates } from './request-states.js';
import type { ToolCallContext, ToolCallOutcome } from '../execute/executor.js';
import type { McpCaller } from './caller.js';
import { createDecider } from './decision.js';
import { createReceipting, roundedMs } from './receipting.js';
import type { CallAnswer, CallDecision, CallPipeline, CallPipelineOptions } from './pipeline-types.js';

export type {
  CallAnswer,
  CallApprovalFinding,
  CallDecision,
  CallPipeline,
  CallPipelineOptions,
  GateFinding,
  PersonActionGate,
} from './pipeline-types.js';

/**
 * MCP Tools › Error Handling: an unknown tool is a protocol error; so is one outside the session or changed
 * since approval (the client cannot call it at all). Other refusals are tool results the model can read.
 */
function isProtocolRefusal(reason: CallDenialReason): boolean {
  return (
    reason === 'TOOL_UNKNOWN' ||
    reason === 'TOOL_NOT_IN_SESSION' ||
    // A retry whose requestState is refused: the SDK answers its own state failures -32602 too.
    reason === 'REQUEST_STATE_INVALID' ||
    reason === 'REQUEST_STATE_EXPIRED' ||
    reason === 'REQUEST_STATE_USED'
  );
}

/** Receipt reasons of executor outcomes that are not `ok` (registered in docs/errors.md). */
const EXECUTION_ERROR_CODES: Record<Exclude<ToolCallOutcome['outcome'], 'ok'>, string> = {
  'upstream-error': 'UPSTREAM_ERROR_STATUS',
  validation: 'TOOL_ARGUMENTS_INVALID',
  credentials: 'CREDENTIALS_UNAVAILABLE',
  timeout: 'UPSTREAM_TIMEOUT',
  'too-large': 'UPSTREAM_RESPONSE_TOO_LARGE',
  'credential-echoed': 'UPSTREAM_RESPONSE_CARRIES_CREDENTIAL',
  network: 'UPSTREAM_UNREACHABLE',
  redirect: 'UPSTREAM_REDIRECT_REFUSED',
  refused: 'UPSTREAM_REQUEST_REFUSED',
  // The client cancelled (closed its request or sent notifications/cancelled); the upstream was told too.
  cancelled: 'CALL_CANCELLED',
};

/**
 * Single use: a retry's state is spent as the call goes on (a second retry racing with it is refused), and the
 * approval of an each-call tool is used right before the call runs (a second use is refused).
 */
async function spendOnce(decision: CallDecision, requestStates: RequestStates, name: string): Promise<void> {
  const claims = decision.requestStateClaims;
  if (claims && decision.verdict.kind !== 'deny' && !(await requestStates.spend(claims, Date.now()))) {
    decision.verdict = { kind: 'deny', reason: 'REQUEST_STATE_USED', message: REQUEST_STATE_USED_MESSAGE };
  }
  if (decision.verdict.kind === 'allow' && decision.approval && !(await decision.approval.use())) {
    decision.verdict = {
      kind: 'deny',
      reason: 'CALL_APPROVAL_UNAVAILABLE',
      message: `the approval of this call of ${name} was used already; call it again to ask for a new one`,
    };
  }
}

/**
 * Without a journal the commit is what makes a receipt durable: a call whose commit failed (the database restarting,
 * a replica's connection cut) has no receipt, so it gets this error (RECEIPT_WRITE_FAILED is logged by the receipting
 * step), never its result as if it had one.
 */
function answerWithheld(tool: string): GatewayError {
  return new GatewayError(
    'RECEIPT_WRITE_FAILED',
    `the call of '${tool}' may have run, but its receipt could not be written: its answer is withheld (a retry may run it again)`,
  );
}

/**
 * Names the current request's trace in its log line (traces on only). Added in place: with traces off a call
 * makes no object and spreads nothing for it (docs/observability.md#cost).
 */
function addTraceId(line: Record<string, unknown>, telemetry: CallPipelineOptions['telemetry']): void {
  const traceId = telemetry?.tracing?.traceId();
  if (traceId) line.traceId = traceId;
}

/** A call's answer, and its receipt once it is in the database. */
type CallResult = { answer: CallAnswer; receipt: Promise<Receipt | undefined> };

export function createCallPipeline(options: CallPipelineOptions): CallPipeline {
  const { registry, authorizer, executor, loaded, receipts, logger } = options;
  const requestStates = options.requestStates ?? createRequestStates();
  const argumentsDigestOf = (argumentsValue: unknown) =>
    receipts ? receipts.argumentsDigest(argumentsValue) : requestStates.argumentsDigest(argumentsValue);
  const decide = createDecider({ registry, authorizer, loaded, requestStates, gates: options.gates ?? [], argumentsDigestOf });
  const telemetry = options.telemetry;
  const { receipt, logAfterAnswer } = createReceipting(receipts, logger, telemetry);

  /** The call's log line, naming its receipt once it has its number (a later turn: after the answer anyway). */
  function logWithReceipt(line: Record<string, unknown>, written: Promise<Receipt | undefined>): void {
    void written.then((receipt) => {
      // The line is this call's own object: named in place, not copied.
      if (receipt) line.receipt = receipt.id;
      logAfterAnswer(line);
    });
  }

  /** The answer once its receipt is durable: at once with a journal (written when `record` returns); else after its commit. */
  function answered(
    tool: string,
    answer: CallAnswer,
    written: Promise<Receipt | undefined>,
    line?: Record<string, unknown>,
  ): CallResult | Promise<CallResult> {
    if (!receipts || receipts.isDurableOnReturn) {
      if (line) logWithReceipt(line, written);
      return { answer, receipt: written };
    }
    return written.then((stored) => {
      if (!stored) throw answerWithheld(tool);
      // Queued once the answer can go: its line still follows the answer, on a later turn.
      if (line) logWithReceipt(line, written);
      return { answer, receipt: written };
    });
  }

  function refuse(caller: McpCaller, decision: CallDecision, argumentsValue: unknown): Promise<Receipt | undefined> {
    const { verdict } = decision;
    if (verdict.kind === 'allow') throw new Error('refuse() called with an allowed decision');
    // "A person must act first" is an outcome of its own: nothing ran, and nothing is wrong with the call.
    const outcome: ReceiptOutcome = verdict.kind === 'act' ? 'action-required' : 'denied';
    const line: Record<string, unknown> = { tool: decision.name, session: caller.sessionId, outcome, reason: verdict.reason };
    addTraceId(line, telemetry);
    const written = receipt(decision, caller, argumentsValue, outcome, verdict.reason, { argumentsDigest: decision.argumentsDigest });
    void written.then((stored) => logger.info({ ...line, ...(stored ? { receipt: stored.id } : {}) }, 'tool call refused'));
    return written;
  }

  /** The answer to "a person must act first": a `visit` gets a fresh requestState bound to this very call. */
  function actAnswer(caller: McpCaller, decision: CallDecision, verdict: Extract<CallVerdict, { kind: 'act' }>): CallAnswer {
    const { reason, message, action } = verdict;
    if (action.kind !== 'visit' || !decision.tool) return { kind: 'act', reason, message, action };
    const binding = {
      session: caller.sessionId,
      person: caller.subject,
      tool: decision.name,
      fingerprint: decision.tool.entry.fingerprint,
      argumentsDigest: decision.argumentsDigest!,
    };
    const { requestState, nonce } = requestStates.issue(binding, decision.receivedAt);
    return { kind: 'act', reason, message, action, requestState, elicitationId: nonce };
  }

  async function callTool(
    caller: McpCaller,
    name: string,
    argumentsValue: unknown,
    signal: CancelSignal | undefined,
    given?: CallDecision,
    onProgress?: ToolCallContext['onProgress'],
    requestState?: string,
  ): Promise<{ answer: CallAnswer; receipt: Promise<Receipt | undefined> }> {
    const argumentsObject = argumentsValue ?? {};
    const deciding = given ?? decide(caller, name, argumentsObject, requestState);
    // A plain call is decided at once: no promise to wait for on its way.
    const decision = deciding instanceof Promise ? await deciding : deciding;
    // A retry's state or an approval is spent once, right before the call runs; a plain call has neither.
    if (decision.requestStateClaims || decision.approval) await spendOnce(decision, requestStates, name);
    const { verdict, tool } = decision;
    if (verdict.kind === 'act') {
      const answer = actAnswer(caller, decision, verdict);
      return answered(name, answer, refuse(caller, decision, argumentsObject));
    }
    if (verdict.kind === 'deny') {
      const written = refuse(caller, decision, argumentsObject);
      const answer: CallAnswer = isProtocolRefusal(verdict.reason)
        ? { kind: 'invalid-params', message: verdict.message }
        : { kind: 'result', result: { content: [{ type: 'text', text: verdict.message }], isError: true } };
      return answered(name, answer, written);
    }
    let outcome: ToolCallOutcome;
    // Made while the upstream works (the executor calls onSent once the request is out), off the answer's path.
    let argumentsDigest = decision.argumentsDigest;
    const onSent =
      receipts && argumentsDigest === undefined ? () => (argumentsDigest = receipts.argumentsDigest(argumentsObject)) : undefined;
    const upstreamSpan = telemetry?.tracing?.upstreamStarted(tool!);
    // Set member by member: the options a call does not use (traces off, no progress) cost it nothing.
    const context: ToolCallContext = { logins: caller.logins, person: caller.subject };
    if (signal) context.signal = signal;
    if (onProgress) context.onProgress = onProgress;
    if (onSent) context.onSent = onSent;
    if (upstreamSpan) context.trace = upstreamSpan.carrier;
    try {
      outcome = await executor.execute(tool!, argumentsObject, context);
    } catch (error) {
      upstreamSpan?.end(undefined);
      receipt(decision, caller, argumentsObject, 'error', 'INTERNAL_ERROR', {});
      throw error;
    }
    upstreamSpan?.end(outcome);
    const line: Record<string, unknown> = {
      tool: name,
      source: tool!.sourceName,
      publication: tool!.publicationId,
      session: caller.sessionId,
      login: outcome.loginId,
      outcome: outcome.outcome,
      upstreamStatus: outcome.upstreamStatus,
      durationMs: roundedMs(outcome.durationMs),
    };
    addTraceId(line, telemetry);
    const isOk = outcome.outcome === 'ok';
    const written = receipt(
      decision,
      caller,
      argumentsObject,
      isOk ? 'allowed' : 'error',
      outcome.outcome === 'ok' ? null : EXECUTION_ERROR_CODES[outcome.outcome],
      {
        login: outcome.loginId,
        ...(outcome.upstreamStatus === undefined ? {} : { upstreamStatus: outcome.upstreamStatus }),
        result: outcome.result,
        argumentsDigest,
        upstreamMs: outcome.durationMs,
      },
    );
    return answered(name, { kind: 'result', result: outcome.result }, written, line);
  }

  return { decide, callTool, refuse };
}
