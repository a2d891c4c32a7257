/**
 * What the call pipeline tells telemetry (metrics, traces), declared here by the pipeline that uses it so the
 * pipeline knows nothing of Prometheus or OpenTelemetry (telemetry/ implements it). The pipeline calls it at
 * one place, the call's receipt point, plus around the upstream call when traces are on.
 */
import type { Receipt, ReceiptOutcome } from '@gateway/core';
import type { ToolCallOutcome, TraceCarrier } from '../execute/tool-call.js';

/** One call, as it reached its receipt: bounded facts only (no session, person or argument values). */
export interface EndedCall {
  tool: string;
  /** The source of the tool, or null for a tool the snapshot does not know. */
  source: string | null;
  outcome: ReceiptOutcome;
  /** The receipt's reason code (a refusal's or an execution error's), null when allowed. */
  reason: string | null;
  /** performance.now() marks: the call received, decided, and at its receipt point. */
  startedMark: number;
  decidedMark: number | undefined;
  endedMark: number;
  /** Time spent in the executor (credentials, the upstream exchange, reading its answer), when it ran. */
  upstreamMs: number | undefined;
}

/** The span of one upstream call while it runs (traces on only). */
export interface UpstreamSpan {
  /** The W3C trace context to send upstream (HTTP headers; `_meta` of an MCP request). */
  readonly carrier: TraceCarrier;
  end(outcome: ToolCallOutcome | undefined): void;
}

export interface CallTelemetry {
  /** At the call's receipt point, once per call; `written` is its receipt once in the database. */
  callEnded(call: EndedCall, written: Promise<Receipt | undefined>): void;
  /**
   * Present only while traces are on (a no-op check on the hot path otherwise): the current request's span
   * continued to the upstream, and the trace id for the call's log line.
   */
  readonly tracing?: {
    upstreamStarted(tool: { name: string; sourceName: string; kind: string }): UpstreamSpan | undefined;
    traceId(): string | undefined;
  };
}
