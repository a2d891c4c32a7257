/**
 * The receipting step of the call pipeline (./pipeline.ts): every call ends in exactly one receipt, durable in
 * the receipt journal before the call is answered; and the call's log line, written after the answer went out.
 */
import type { Receipt, ReceiptOutcome } from '@gateway/core';
import type { FastifyBaseLogger } from 'fastify';
import type { McpCaller } from './caller.js';
import type { ReceiptFields, ReceiptLog } from '../receipts/log.js';
import { runInBackground } from '../scheduling/background-lane.js';
import type { CallTelemetry } from './call-telemetry.js';
import type { CallDecision } from './pipeline-types.js';

export function roundedMs(milliseconds: number): number {
  return Math.round(milliseconds * 10) / 10;
}

export interface ReceiptExtra {
  login?: string | null;
  upstreamStatus?: number;
  result?: unknown;
  argumentsDigest?: string | undefined;
  /** Time spent in the executor, when it ran (telemetry's upstream share). */
  upstreamMs?: number;
}

const NO_RECEIPT: Promise<Receipt | undefined> = Promise.resolve(undefined);

export function createReceipting(receipts: ReceiptLog | undefined, logger: FastifyBaseLogger, telemetry?: CallTelemetry) {
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
    extra: ReceiptExtra,
  ): Promise<Receipt | undefined> {
    const tool = decision.tool;
    const endedMark = performance.now();
    let written: Promise<Receipt | undefined>;
    if (!receipts) written = NO_RECEIPT;
    else {
      try {
        const fields: ReceiptFields = {
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
        // Only a call decided on a one-call approval names it: a plain call's fields stay as they are.
        if (decision.approval !== undefined) fields.approval = decision.approval.id;
        written = receipts.record(fields).catch((error: unknown) => unwritten(error, decision.name, caller.sessionId));
      } catch (error) {
        written = Promise.resolve(unwritten(error, decision.name, caller.sessionId));
      }
    }
    // The one place every call is counted and traced, whatever its outcome.
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
  }

  /** The call has happened: it is answered, and this says loudly that its receipt is missing. */
  function unwritten(error: unknown, tool: string, session: string): undefined {
    logger.error({ code: 'RECEIPT_WRITE_FAILED', tool, session, error: (error as Error).message }, 'receipt not written');
    return undefined;
  }

  return { receipt, logAfterAnswer };
}
