/**
 * Progress forwarding (MCP Utilities › Progress): when a client's `tools/call` carries
 * `_meta.progressToken`, the upstream's progress notifications for that call are sent back to the client
 * under the client's own token. Without a token nothing is sent (the spec lets a receiver send progress only
 * for a token it was given). The fast path never sees such requests: a `_meta` member it does not know sends
 * the request to the SDK path (mcp/fast-path.ts), where the handler context can send notifications.
 */
import type { ToolCallContext } from '../execute/executor.js';

type ProgressToken = string | number;

interface ProgressContext {
  mcpReq: {
    _meta?: { progressToken?: unknown };
    notify(notification: { method: string; params?: Record<string, unknown> }): Promise<void>;
  };
}

function isProgressToken(value: unknown): value is ProgressToken {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

export interface ProgressForwarder {
  /** The executor's `onProgress`; undefined when the client asked for no progress. */
  onProgress: ToolCallContext['onProgress'];
  /**
   * Resolves once every notification sent so far is written. The handler awaits it before answering: the
   * last progress often arrives just before the result, and once the result is written the response stream
   * ends, so a notification still on its way would be lost.
   */
  settled(): Promise<void>;
}

export function progressForwarder(context: ProgressContext, onFailure?: (error: Error) => void): ProgressForwarder {
  const token = context.mcpReq._meta?.progressToken;
  if (!isProgressToken(token)) return { onProgress: undefined, settled: async () => undefined };
  let pending: Promise<void> = Promise.resolve();
  return {
    onProgress(progress) {
      const params: Record<string, unknown> = { progressToken: token, progress: progress.progress };
      if (progress.total !== undefined) params.total = progress.total;
      if (progress.message !== undefined) params.message = progress.message;
      // A client that went away cannot receive it; the call itself is cancelled through the request signal.
      const sent = context.mcpReq.notify({ method: 'notifications/progress', params }).catch((error: Error) => onFailure?.(error));
      pending = pending.then(() => sent);
    },
    settled: () => pending,
  };
}
