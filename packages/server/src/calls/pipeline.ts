/**
 * The one path every governed tool call takes, whatever the /mcp era or path and, later, the source kind:
 * resolve the tool in the caller's snapshot → decide (core `decideCall`) → execute → write the receipt to
 * the receipt journal (durable) → answer; right after the answer, the receipt log moves the receipt (and,
 * through its hooks, its outbox rows) into the database in one transaction, shared with every receipt written
 * meanwhile (receipts/journal.ts). Refusals are receipted too. The wire mapping stays with the MCP layer: this
 * returns a protocol-neutral answer.
 */
import { decideCall, type CallDenialReason, type CallVerdict, type LoadedConfig, type Receipt, type ReceiptOutcome } from '@gateway/core';
import type { FastifyBaseLogger } from 'fastify';
import { loginIdOf } from '../credentials/index.js';
import type { Executor, ToolCallContext, ToolCallOutcome, ToolResult } from '../execute/executor.js';
import type { McpAuthorizer, McpCaller } from './caller.js';
import type { IndexedTool, PublicationRegistry } from '../publications/registry.js';
import type { ReceiptLog } from '../receipts/log.js';
import { runInBackground } from '../scheduling/background-lane.js';

/** How a call is answered: a tool result (possibly `isError`), or an invalid-params protocol error. */
export type CallAnswer = { kind: 'result'; result: ToolResult } | { kind: 'invalid-params'; message: string };

export interface CallDecision {
  name: string;
  tool: IndexedTool | undefined;
  verdict: CallVerdict;
  /** When the call was received (epoch ms and a monotonic mark for the duration). */
  receivedAt: number;
  startedMark: number;
}

export interface CallPipeline {
  /** Resolves and decides without side effects (the fast path asks first, then calls with the decision). */
  decide(caller: McpCaller, name: string): CallDecision;
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
  ): Promise<{ answer: CallAnswer; receipt: Promise<Receipt | undefined> }>;
  /**
   * Receipts a denied decision that the MCP layer answers itself (the re-approval challenge, a 403 at the
   * HTTP layer): the refusal still ends in exactly one receipt, durable when this returns; the promise is
   * that receipt once it is in the database.
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
}

/**
 * MCP Tools › Error Handling: an unknown tool is a protocol error; so is one outside the session or changed
 * since approval (the client cannot call it at all). Other refusals are tool results the model can read.
 */
function isProtocolRefusal(reason: CallDenialReason): boolean {
  return reason === 'TOOL_UNKNOWN' || reason === 'TOOL_NOT_IN_SESSION' || reason === 'TOOL_CHANGED_SINCE_APPROVAL';
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

function roundedMs(milliseconds: number): number {
  return Math.round(milliseconds * 10) / 10;
}

export function createCallPipeline(options: CallPipelineOptions): CallPipeline {
  const { registry, authorizer, executor, loaded, receipts, logger } = options;
  // Per tool object (a snapshot's tools never change): the login ids each configured security alternative needs.
  const loginAlternativesCache = new WeakMap<IndexedTool, string[][]>();

  function loginAlternatives(tool: IndexedTool): string[][] | undefined {
    if (!loaded) return undefined;
    // An MCP source has one credential of the gateway's own (docs/sources-mcp.md), not logins a session picks.
    if (tool.kind === 'mcp') return [[]];
    let alternatives = loginAlternativesCache.get(tool);
    if (!alternatives) {
      const source = loaded.config.sources[tool.sourceName];
      const credentials = source?.kind === 'openapi' ? (source.credentials ?? {}) : {};
      const security = tool.operation.security.length === 0 ? [{}] : tool.operation.security;
      alternatives = [];
      for (const alternative of security) {
        const schemes = Object.keys(alternative).sort();
        if (!schemes.every((scheme) => Object.hasOwn(credentials, scheme))) continue;
        alternatives.push(
          schemes.filter((scheme) => credentials[scheme]!.type !== 'none').map((scheme) => loginIdOf(tool.sourceName, scheme)),
        );
      }
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

  function decide(caller: McpCaller, name: string): CallDecision {
    const receivedAt = Date.now();
    const startedMark = performance.now();
    const tool = registry.snapshot().tools.get(name);
    const verdict = decideCall({
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
    });
    return { name, tool, verdict, receivedAt, startedMark };
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
    extra: { login?: string | null; upstreamStatus?: number; result?: unknown; argumentsDigest?: string | undefined },
  ): Promise<Receipt | undefined> {
    if (!receipts) return Promise.resolve(undefined);
    const tool = decision.tool;
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
        durationMs: roundedMs(performance.now() - decision.startedMark),
        argumentsValue,
        argumentsDigest: extra.argumentsDigest,
        resultValue: extra.result,
      };
      return receipts.record(fields).catch(failed);
    } catch (error) {
      return Promise.resolve(failed(error));
    }
  }

  function refuse(caller: McpCaller, decision: CallDecision, argumentsValue: unknown): Promise<Receipt | undefined> {
    const { verdict } = decision;
    if (verdict.allowed) throw new Error('refuse() called with an allowed decision');
    logger.info({ tool: decision.name, session: caller.sessionId, outcome: 'denied', reason: verdict.reason }, 'tool call refused');
    return receipt(decision, caller, argumentsValue, 'denied', verdict.reason, {});
  }

  async function callTool(
    caller: McpCaller,
    name: string,
    argumentsValue: unknown,
    signal: AbortSignal | undefined,
    given?: CallDecision,
    onProgress?: ToolCallContext['onProgress'],
  ): Promise<{ answer: CallAnswer; receipt: Promise<Receipt | undefined> }> {
    const decision = given ?? decide(caller, name);
    const argumentsObject = argumentsValue ?? {};
    const { verdict, tool } = decision;
    if (!verdict.allowed) {
      const written = refuse(caller, decision, argumentsObject);
      const answer: CallAnswer = isProtocolRefusal(verdict.reason)
        ? { kind: 'invalid-params', message: verdict.message }
        : { kind: 'result', result: { content: [{ type: 'text', text: verdict.message }], isError: true } };
      return { answer, receipt: written };
    }
    let outcome: ToolCallOutcome;
    // Made while the upstream works (the executor calls onSent once the request is out), off the answer's path.
    let argumentsDigest: string | undefined;
    const onSent = receipts ? () => (argumentsDigest = receipts.argumentsDigest(argumentsObject)) : undefined;
    try {
      outcome = await executor.execute(tool!, argumentsObject, {
        logins: caller.logins,
        ...(signal ? { signal } : {}),
        ...(onProgress ? { onProgress } : {}),
        ...(onSent ? { onSent } : {}),
      });
    } catch (error) {
      receipt(decision, caller, argumentsObject, 'error', 'INTERNAL_ERROR', {});
      throw error;
    }
    const line = {
      tool: name,
      source: tool!.sourceName,
      publication: tool!.publicationId,
      session: caller.sessionId,
      login: outcome.loginId,
      outcome: outcome.outcome,
      upstreamStatus: outcome.upstreamStatus,
      durationMs: roundedMs(outcome.durationMs),
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
      },
    );
    logAfterAnswer(line);
    return { answer: { kind: 'result', result: outcome.result }, receipt: written };
  }

  return { decide, callTool, refuse };
}
