/**
 * The one path every governed tool call takes, whatever the /mcp era or path and, later, the source kind:
 * resolve the tool in the caller's snapshot → decide (core `decideCall`) → execute → write the receipt to
 * the receipt journal (durable) → answer; right after the answer, the receipt log moves the receipt (and,
 * through its hooks, its outbox rows) into the database in one transaction, shared with every receipt written
 * meanwhile (receipts/journal.ts). Refusals are receipted too. The wire mapping stays with the MCP layer: this
 * returns a protocol-neutral answer.
 */
import {
  decideCall,
  loginAlternativesOf,
  type CallDenialReason,
  type CallFacts,
  type CallVerdict,
  type LoadedConfig,
  type LoginAlternative,
  type PendingPersonAction,
  type PersonAction,
  type PersonActionReason,
  type Receipt,
  type ReceiptOutcome,
  type RequestStateClaims,
} from '@gateway/core';
import type { FastifyBaseLogger } from 'fastify';
import { createRequestStates, type RequestStates } from './request-states.js';
import type { Executor, ToolCallContext, ToolCallOutcome, ToolResult } from '../execute/executor.js';
import type { McpAuthorizer, McpCaller } from './caller.js';
import type { CallTelemetry } from './call-telemetry.js';
import type { IndexedTool, PublicationRegistry } from '../publications/registry.js';
import type { ReceiptLog } from '../receipts/log.js';
import { runInBackground } from '../scheduling/background-lane.js';

/**
 * How a call is answered: a tool result (possibly `isError`), an invalid-params protocol error, or "a person
 * must act first" (the MCP layer encodes it per era: mcp/plugin.ts). A `visit` carries the `requestState` the
 * retry must bring back and the elicitation id (the state's nonce).
 */
export type CallAnswer =
  | { kind: 'result'; result: ToolResult }
  | { kind: 'invalid-params'; message: string }
  | {
      kind: 'act';
      reason: PersonActionReason;
      message: string;
      action: PersonAction;
      requestState?: string;
      elicitationId?: string;
    };

/**
 * A source of "a person must act first" besides the core rules: given the caller, the tool and the arguments,
 * what a person must still do (link an account for OAuth per person, approve this very call…). Asked only
 * when the core rules would otherwise allow the call.
 */
export interface PersonActionGate {
  pendingAction(caller: McpCaller, tool: IndexedTool, argumentsValue: unknown): PendingPersonAction | undefined;
}

export interface CallDecision {
  name: string;
  tool: IndexedTool | undefined;
  verdict: CallVerdict;
  /** The retry's `requestState`, opened and checked (spent when the call goes on). */
  requestStateClaims?: RequestStateClaims;
  /** The keyed digest of the arguments, when the decision needed it (a `requestState` or a gate). */
  argumentsDigest?: string;
  /** When the call was received (epoch ms and a monotonic mark for the duration). */
  receivedAt: number;
  startedMark: number;
  /** When the verdict was reached (a monotonic mark, for the decision's span). */
  decidedMark?: number;
}

export interface CallPipeline {
  /**
   * Resolves and decides without side effects (the fast path asks first, then calls with the decision). The
   * arguments matter only to a retry's `requestState` and to the gates; without either they are not read.
   */
  decide(caller: McpCaller, name: string, argumentsValue?: unknown, requestState?: string): CallDecision;
  /**
   * Runs the call to its answer and durable receipt; `receipt` resolves once that receipt is in the database
   * (undefined when it could not be written, which is logged). An executor failure (a bug, not an upstream
   * error) is receipted as `error` `INTERNAL_ERROR` and rethrown for the MCP layer to answer as the SDK would.
   */
  callTool(
    caller: McpCaller,
    name: string,
    argumentsValue: unknown,
    signal: AbortSignal | undefined,
    decision?: CallDecision,
    onProgress?: ToolCallContext['onProgress'],
    requestState?: string,
  ): Promise<{ answer: CallAnswer; receipt: Promise<Receipt | undefined> }>;
  /**
   * Receipts a decision that did not allow the call and that the MCP layer answers itself (the re-approval
   * challenge, a 401 for an ended session): it still ends in exactly one receipt (`denied`, or
   * `action-required`), durable when this returns; the promise is that receipt once it is in the database.
   */
  refuse(caller: McpCaller, decision: CallDecision, argumentsValue: unknown): Promise<Receipt | undefined>;
}

export interface CallPipelineOptions {
  registry: PublicationRegistry;
  authorizer: McpAuthorizer;
  executor: Executor;
  /** The config (login checks before execution); without it the executor's credential resolver refuses. */
  loaded?: LoadedConfig;
  /** Absent when `receipts.enabled: false`. */
  receipts: ReceiptLog | undefined;
  logger: FastifyBaseLogger;
  /** Seals and checks `requestState`s (default: a key of this process; the gateway passes the vault's). */
  requestStates?: RequestStates;
  /** Sources of "a person must act first" besides the core rules (none in production yet). */
  gates?: readonly PersonActionGate[];
  /** Metrics and traces (telemetry/): told of every call at its receipt point. */
  telemetry?: CallTelemetry;
}

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

const ALLOW: CallVerdict = Object.freeze({ kind: 'allow' });

function roundedMs(milliseconds: number): number {
  return Math.round(milliseconds * 10) / 10;
}

export function createCallPipeline(options: CallPipelineOptions): CallPipeline {
  const { registry, authorizer, executor, loaded, receipts, logger, telemetry } = options;
  const requestStates = options.requestStates ?? createRequestStates();
  const gates = options.gates ?? [];
  const argumentsDigestOf = (argumentsValue: unknown) =>
    receipts ? receipts.argumentsDigest(argumentsValue) : requestStates.argumentsDigest(argumentsValue);
  // Per tool object (a snapshot's tools never change): the configured security alternatives and their logins.
  const loginAlternativesCache = new WeakMap<IndexedTool, LoginAlternative[]>();
  const NO_LOGINS: LoginAlternative[] = [{ schemes: [], logins: [] }];

  function loginAlternatives(tool: IndexedTool): LoginAlternative[] | undefined {
    if (!loaded) return undefined;
    // An MCP source has one credential of the gateway's own (docs/sources-mcp.md), not logins a session picks.
    if (tool.kind === 'mcp') return NO_LOGINS;
    let alternatives = loginAlternativesCache.get(tool);
    if (!alternatives) {
      const source = loaded.config.sources[tool.sourceName];
      const credentials = source?.kind === 'openapi' ? (source.credentials ?? {}) : {};
      alternatives = loginAlternativesOf(tool.sourceName, tool.operation.security, credentials);
      loginAlternativesCache.set(tool, alternatives);
    }
    return alternatives;
  }

  // Log lines of calls answered since the last batch went out: one background task writes them all, so under load
  // the lane holds one task for them, not one per call, and a receipt's move or an acknowledgement queued behind
  // them waits less (scheduling/background-lane.ts).
  let unloggedLines: object[] = [];
  const writeLogLines = () => {
    const lines = unloggedLines;
    unloggedLines = [];
    for (const line of lines) logger.info(line, 'tool call');
  };
  /** Logs a call's line once the answer has gone out: not part of the call, it need not delay it. */
  function logAfterAnswer(line: object): void {
    unloggedLines.push(line);
    if (unloggedLines.length === 1) runInBackground(writeLogLines);
  }

  function decide(caller: McpCaller, name: string, argumentsValue?: unknown, requestState?: string): CallDecision {
    const receivedAt = Date.now();
    const startedMark = performance.now();
    const tool = registry.snapshot().tools.get(name);
    const facts: CallFacts = {
      toolName: name,
      session: { id: caller.sessionId, state: authorizer.sessionState(caller.sessionId), expiresAt: caller.expiresAt },
      now: receivedAt,
      ...(tool
        ? {
            tool: { fingerprint: tool.entry.fingerprint, operationName: tool.entry.tool },
            approvedFingerprint: caller.tools.get(name),
            driftReason: registry.blockedReason(tool.sourceName, name),
            loginAlternatives: loginAlternatives(tool),
          }
        : {}),
      grantedLogins: caller.logins,
    };
    const decision: CallDecision = { name, tool, verdict: ALLOW, receivedAt, startedMark };
    // The arguments matter only to a retry's state and to the gates: the plain allowed call reads none of this.
    if (tool && (requestState !== undefined || gates.length > 0)) {
      const argumentsObject = argumentsValue ?? {};
      const argumentsDigest = argumentsDigestOf(argumentsObject);
      decision.argumentsDigest = argumentsDigest;
      if (requestState !== undefined) {
        const binding = {
          session: caller.sessionId,
          person: caller.subject,
          tool: name,
          fingerprint: tool.entry.fingerprint,
          argumentsDigest,
        };
        const check = requestStates.check(requestState, binding, receivedAt);
        if (check.ok) {
          facts.requestState = { ok: true };
          decision.requestStateClaims = check.claims;
        } else {
          facts.requestState = { ok: false, reason: check.reason, message: check.message };
        }
      }
      for (const gate of gates) {
        const pending = gate.pendingAction(caller, tool, argumentsObject);
        if (pending) {
          facts.pendingAction = pending;
          break;
        }
      }
    }
    decision.verdict = decideCall(facts);
    decision.decidedMark = performance.now();
    return decision;
  }

  /**
   * Records the call's receipt: durable when this returns, so the call may be answered. The promise is the
   * receipt once it is in the database (undefined when it could not be written, which is logged here).
   */
  function receipt(
    decision: CallDecision,
    caller: McpCaller,
    argumentsValue: unknown,
    outcome: ReceiptOutcome,
    reason: string | null,
    extra: { login?: string | null; upstreamStatus?: number; result?: unknown; argumentsDigest?: string | undefined; upstreamMs?: number },
  ): Promise<Receipt | undefined> {
    const endedMark = performance.now();
    const tool = decision.tool;
    // The one place every call is counted and traced, whatever its outcome.
    const observed = (written: Promise<Receipt | undefined>): Promise<Receipt | undefined> => {
      telemetry?.callEnded(
        {
          tool: decision.name,
          source: tool?.sourceName ?? null,
          outcome,
          reason,
          startedMark: decision.startedMark,
          decidedMark: decision.decidedMark,
          endedMark,
          upstreamMs: extra.upstreamMs,
        },
        written,
      );
      return written;
    };
    if (!receipts) return observed(Promise.resolve(undefined));
    const failed = (error: unknown): undefined => {
      // The call has happened: answer it, and say loudly that its receipt is missing.
      logger.error(
        { code: 'RECEIPT_WRITE_FAILED', tool: decision.name, session: caller.sessionId, error: (error as Error).message },
        'receipt not written',
      );
      return undefined;
    };
    try {
      const fields = {
        time: new Date(decision.receivedAt).toISOString(),
        session: caller.sessionId,
        person: caller.subject,
        clientId: caller.clientId,
        tool: decision.name,
        source: tool?.sourceName ?? null,
        publication: tool?.publicationId ?? null,
        fingerprint: tool?.entry.fingerprint ?? null,
        login: extra.login ?? null,
        outcome,
        reason,
        upstreamStatus: extra.upstreamStatus ?? null,
        durationMs: roundedMs(endedMark - decision.startedMark),
        argumentsValue,
        argumentsDigest: extra.argumentsDigest,
        resultValue: extra.result,
      };
      return observed(receipts.record(fields).catch(failed));
    } catch (error) {
      return observed(Promise.resolve(failed(error)));
    }
  }

  function refuse(caller: McpCaller, decision: CallDecision, argumentsValue: unknown): Promise<Receipt | undefined> {
    const { verdict } = decision;
    if (verdict.kind === 'allow') throw new Error('refuse() called with an allowed decision');
    // "A person must act first" is an outcome of its own: nothing ran, and nothing is wrong with the call.
    const outcome: ReceiptOutcome = verdict.kind === 'act' ? 'action-required' : 'denied';
    const line = { tool: decision.name, session: caller.sessionId, outcome, reason: verdict.reason, ...traceField() };
    const written = receipt(decision, caller, argumentsValue, outcome, verdict.reason, { argumentsDigest: decision.argumentsDigest });
    void written.then((written) => logger.info({ ...line, ...(written ? { receipt: written.id } : {}) }, 'tool call refused'));
    return written;
  }

  /** The trace id of the current request for a log line (traces on only). */
  function traceField(): { traceId?: string } {
    const traceId = telemetry?.tracing?.traceId();
    return traceId ? { traceId } : {};
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
    signal: AbortSignal | undefined,
    given?: CallDecision,
    onProgress?: ToolCallContext['onProgress'],
    requestState?: string,
  ): Promise<{ answer: CallAnswer; receipt: Promise<Receipt | undefined> }> {
    const argumentsObject = argumentsValue ?? {};
    const decision = given ?? decide(caller, name, argumentsObject, requestState);
    // Single use: a retry's state is spent as the call goes on; a second retry racing with it is refused.
    const claims = decision.requestStateClaims;
    if (claims && decision.verdict.kind !== 'deny' && !requestStates.spend(claims, Date.now())) {
      decision.verdict = { kind: 'deny', reason: 'REQUEST_STATE_USED', message: 'the requestState of this retry was already used' };
    }
    const { verdict, tool } = decision;
    if (verdict.kind === 'act') {
      const answer = actAnswer(caller, decision, verdict);
      return { answer, receipt: refuse(caller, decision, argumentsObject) };
    }
    if (verdict.kind === 'deny') {
      const written = refuse(caller, decision, argumentsObject);
      const answer: CallAnswer = isProtocolRefusal(verdict.reason)
        ? { kind: 'invalid-params', message: verdict.message }
        : { kind: 'result', result: { content: [{ type: 'text', text: verdict.message }], isError: true } };
      return { answer, receipt: written };
    }
    let outcome: ToolCallOutcome;
    // Made while the upstream works (the executor calls onSent once the request is out), off the answer's path.
    let argumentsDigest = decision.argumentsDigest;
    const onSent =
      receipts && argumentsDigest === undefined ? () => (argumentsDigest = receipts.argumentsDigest(argumentsObject)) : undefined;
    const upstreamSpan = telemetry?.tracing?.upstreamStarted(tool!);
    try {
      outcome = await executor.execute(tool!, argumentsObject, {
        logins: caller.logins,
        ...(signal ? { signal } : {}),
        ...(onProgress ? { onProgress } : {}),
        ...(onSent ? { onSent } : {}),
        ...(upstreamSpan ? { trace: upstreamSpan.carrier } : {}),
      });
    } catch (error) {
      upstreamSpan?.end(undefined);
      receipt(decision, caller, argumentsObject, 'error', 'INTERNAL_ERROR', {});
      throw error;
    }
    upstreamSpan?.end(outcome);
    const line = {
      tool: name,
      source: tool!.sourceName,
      publication: tool!.publicationId,
      session: caller.sessionId,
      login: outcome.loginId,
      outcome: outcome.outcome,
      upstreamStatus: outcome.upstreamStatus,
      durationMs: roundedMs(outcome.durationMs),
      ...traceField(),
    };
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
    // The line names the call's receipt once it has its number (a later turn: after the answer anyway).
    void written.then((written) => logAfterAnswer(written ? { ...line, receipt: written.id } : line));
    return { answer: { kind: 'result', result: outcome.result }, receipt: written };
  }

  return { decide, callTool, refuse };
}
