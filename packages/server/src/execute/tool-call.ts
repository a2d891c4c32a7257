/**
 * What a tool call is given and what it gives back, whatever the source kind: declared apart from executor.ts so
 * the per-kind modules (mcp-call.ts) and the executor that dispatches to them import the same types without
 * importing each other.
 */
import type { CancelSignal } from '@gateway/runtime';

/** A content block of a tool result (the MCP `ContentBlock` shapes the executor produces). */
export type ToolContent =
  | { type: 'text'; text: string }
  | { type: 'resource'; resource: { uri: string; mimeType: string; blob: string } }
  /** Any other block an upstream MCP server returned (image, audio, resource_link, resource), passed through (credentials redacted). */
  | { type: string; [key: string]: unknown };

/** A tool result, protocol-neutral: the MCP layer maps it per era. */
export interface ToolResult {
  content: ToolContent[];
  /** The parsed JSON response (any JSON value; the MCP layer wraps non-objects for 2025-11-25). */
  structuredContent?: unknown;
  isError?: boolean;
}

/** What one call did, for logs and (later) receipts. Never secrets. */
export interface ToolCallOutcome {
  result: ToolResult;
  /** The final upstream HTTP status, when the upstream answered. */
  upstreamStatus?: number;
  /** `validation`, `credentials`, `upstream`, `timeout`, `too-large`, `network`, `redirect`, `ok`. */
  outcome:
    | 'ok'
    | 'upstream-error'
    | 'validation'
    | 'credentials'
    | 'timeout'
    | 'too-large'
    | 'network'
    | 'redirect'
    | 'refused'
    | 'cancelled'
    /** The answer carried a credential of the call in bytes, which cannot be redacted: refused. */
    | 'credential-echoed';
  loginId: string | null;
  durationMs: number;
}

export interface ToolCallContext {
  /** Logins the caller's session allows (`<source>/<scheme>`). */
  logins: ReadonlySet<string>;
  /** The session's person: a per-person login carries this person's own token. */
  person?: string;
  /** Aborted when the MCP client goes away (2026-07-28: closing the stream cancels the request). */
  signal?: CancelSignal;
  /** Forwards progress of a long call to the client (MCP sources forward the upstream's notifications). */
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
  /**
   * Called once, right after the upstream request is sent and before its answer is awaited: work the call
   * must do anyway (the receipt's arguments digest) runs while the upstream works, not after it answers.
   */
  onSent?: () => void;
  /** W3C trace context to pass on (traces on only): HTTP headers upstream, `_meta` of an MCP upstream's request. */
  trace?: TraceCarrier;
}

/** W3C Trace Context (`traceparent`, optional `tracestate`), as headers or MCP `_meta` keys (SEP-414) carry it. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}
