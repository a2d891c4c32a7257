import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { CancelSignal } from './cancellation.js';

export interface ExchangeOptions {
  /** The agent: the SSRF-guarded one (agent.ts) for anything the gateway sends. */
  dispatcher: Dispatcher;
  url: URL;
  method: Dispatcher.HttpMethod;
  headers: Record<string, string>;
  body?: string | Buffer | undefined;
  /** The whole exchange, connection to last byte: then it is cut with a `TimeoutError`. */
  timeoutMs: number;
  /** The most response body bytes kept. */
  maxBodyBytes: number;
  /**
   * Past `maxBodyBytes` (or a larger Content-Length): `fail` rejects with ResponseTooLarge; `ignore` stops
   * reading and resolves with the status and headers (a webhook receiver's answer body is not used).
   */
  overLimit: 'fail' | 'ignore';
  /** Cancels the exchange (the client went away); it rejects with the signal's reason. */
  signal?: CancelSignal | undefined;
}

export interface ExchangeResult {
  statusCode: number;
  headers: IncomingHttpHeaders;
  /** The body read (empty with `overLimit: 'ignore'` once the limit was passed). */
  body: Buffer;
}

/**
 * The response was larger than `maxBodyBytes` (declared or read) with `overLimit: 'fail'`. Internal: callers
 * turn it into their own refusal (a tool call's `too-large` outcome), so it carries no registered code.
 */
export class ResponseTooLarge extends Error {
  constructor(limit: number) {
    super(`the response is larger than ${limit} bytes`);
  }
}

/** Whether an exchange failed on its deadline: its own timer, or undici's header/body timeout (set to the same). */
export function isExchangeTimeout(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  return (error as Error | undefined)?.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
}

/** Why a cancelling signal fired, as the Error the exchange rejects with. */
function reasonOf(signal: CancelSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('cancelled', 'AbortError');
}

/**
 * One HTTP request and its whole (bounded) response through undici's `dispatch` with a plain handler: the
 * gateway's outbound calls (tool calls, webhook deliveries) run it once each. Against `undici.request` +
 * reading the body stream, this skips the per-request AsyncResource, Readable stream and abort-signal
 * wiring, on every tool call and every event (figures: docs/performance.md, "One HTTP exchange"). Errors are
 * undici's (connect timeout, refused address from the guard, reset), a `TimeoutError` DOMException, the
 * cancelling signal's reason, or ResponseTooLarge.
 */
export function exchange(options: ExchangeOptions): Promise<ExchangeResult> {
  return new Promise<ExchangeResult>((resolve, reject) => {
    const { signal, maxBodyBytes } = options;
    let abort: ((reason: Error) => void) | undefined;
    let pendingAbort: Error | undefined;
    let isSettled = false;
    let statusCode = 0;
    let headers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    let size = 0;
    let isIgnoring = false;

    // Cuts the exchange. Not started yet (waiting for a connection): it settles now and is cut when it starts.
    const cut = (reason: Error) => {
      if (abort) {
        abort(reason);
        return;
      }
      pendingAbort = reason;
      settle(reason);
    };
    const timer = setTimeout(
      () => cut(new DOMException(`no complete answer within ${options.timeoutMs} ms`, 'TimeoutError')),
      options.timeoutMs,
    );
    const onAbort = () => cut(reasonOf(signal!));
    const settle = (error: Error | undefined) => {
      if (isSettled) return;
      isSettled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (error) reject(error);
      else resolve({ statusCode, headers, body: isIgnoring ? Buffer.alloc(0) : Buffer.concat(chunks, size) });
    };
    if (signal?.aborted) {
      clearTimeout(timer);
      reject(reasonOf(signal));
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });

    options.dispatcher.dispatch(
      {
        origin: options.url.origin,
        path: `${options.url.pathname}${options.url.search}`,
        method: options.method,
        headers: options.headers,
        body: options.body ?? null,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      },
      {
        onRequestStart(controller) {
          abort = (reason) => controller.abort(reason);
          if (pendingAbort) controller.abort(pendingAbort);
        },
        onResponseStart(controller, status, responseHeaders) {
          statusCode = status;
          headers = responseHeaders;
          const declared = Number(responseHeaders['content-length']);
          if (Number.isFinite(declared) && declared > maxBodyBytes) tooLarge(controller);
        },
        onResponseData(controller, chunk) {
          if (isIgnoring || isSettled) return;
          size += chunk.length;
          if (size > maxBodyBytes) tooLarge(controller);
          else chunks.push(chunk);
        },
        onResponseEnd() {
          settle(undefined);
        },
        onResponseError(_controller, error) {
          settle(error);
        },
      },
    );

    function tooLarge(controller: Dispatcher.DispatchController) {
      if (options.overLimit === 'ignore') {
        // Answered: the status is what counts. Stop reading (the connection is closed, not reused).
        isIgnoring = true;
        settle(undefined);
      } else {
        settle(new ResponseTooLarge(maxBodyBytes));
      }
      controller.abort(new ResponseTooLarge(maxBodyBytes));
    }
  });
}
