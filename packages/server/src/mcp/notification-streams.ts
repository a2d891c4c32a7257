import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { McpCaller } from '../calls/caller.js';

/**
 * The standalone server-to-client stream of MCP 2025-11-25 (Streamable HTTP › Listening for Messages):
 * `GET /mcp` with `Accept: text/event-stream` opens an SSE stream on which the gateway sends
 * `notifications/tools/list_changed` when the published tools change, as `tools.listChanged: true`
 * promises that era's clients. 2026-07-28 clients use `subscriptions/listen` instead (the SDK serves it).
 *
 * Bounded: at most `maxPerSession` streams per session (a new one ends the oldest, so a client that lost
 * a connection without noticing is never locked out) and `maxTotal` in all. Comment lines keep idle
 * proxies from cutting the stream; each keep-alive also re-checks the session, so a stream ends when its
 * session is revoked (even by `gateway sessions revoke` in another process) or expires, and on shutdown.
 * Nothing is replayed: the stream carries no event ids and `Last-Event-ID` is ignored (a missed
 * list_changed only means the client lists again later).
 */
export interface NotificationStreamOptions {
  logger: FastifyBaseLogger;
  /** Re-checked on every keep-alive: false once the session was revoked or expired. */
  isSessionOpen(sessionId: string): boolean;
  maxPerSession?: number;
  maxTotal?: number;
  keepAliveMs?: number;
}

export const DEFAULT_STREAMS_PER_SESSION = 4;
export const DEFAULT_STREAMS_TOTAL = 10_000;
export const DEFAULT_KEEP_ALIVE_MS = 25_000;

interface OpenStream {
  sessionId: string;
  response: ServerResponse;
  keepAlive: NodeJS.Timeout;
  expiry: NodeJS.Timeout | undefined;
}

const TOOLS_LIST_CHANGED = `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`;

/** Node timers hold at most 2^31-1 ms; a later expiry is caught by the keep-alive check instead. */
const MAX_TIMER_MS = 2_147_483_647;

export class NotificationStreams {
  private readonly streams = new Set<OpenStream>();
  private readonly maxPerSession: number;
  private readonly maxTotal: number;
  private readonly keepAliveMs: number;

  constructor(private readonly options: NotificationStreamOptions) {
    this.maxPerSession = options.maxPerSession ?? DEFAULT_STREAMS_PER_SESSION;
    this.maxTotal = options.maxTotal ?? DEFAULT_STREAMS_TOTAL;
    this.keepAliveMs = options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  }

  get size(): number {
    return this.streams.size;
  }

  /** Whether another stream may open now (checked before the response is taken over). */
  hasRoom(): boolean {
    return this.streams.size < this.maxTotal;
  }

  /** Takes over `response` (already hijacked from Fastify) as the caller's stream. */
  open(caller: McpCaller, response: ServerResponse): void {
    const ofSession = [...this.streams].filter((stream) => stream.sessionId === caller.sessionId);
    for (const oldest of ofSession.slice(0, Math.max(0, ofSession.length - this.maxPerSession + 1))) {
      this.options.logger.info({ session: caller.sessionId }, 'mcp notification stream replaced by a newer one of the session');
      this.end(oldest);
    }
    response.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      // MCP Streamable HTTP: proxies such as nginx must not buffer the stream.
      'x-accel-buffering': 'no',
    });
    response.write(': stream open\n\n');
    const stream: OpenStream = {
      sessionId: caller.sessionId,
      response,
      keepAlive: setInterval(() => {
        if (!this.options.isSessionOpen(caller.sessionId) || caller.expiresAt <= Date.now()) this.end(stream);
        else response.write(': keep-alive\n\n');
      }, this.keepAliveMs),
      expiry:
        caller.expiresAt - Date.now() < MAX_TIMER_MS
          ? setTimeout(() => this.end(stream), Math.max(0, caller.expiresAt - Date.now()))
          : undefined,
    };
    stream.keepAlive.unref();
    stream.expiry?.unref();
    this.streams.add(stream);
    response.once('close', () => this.forget(stream));
    this.options.logger.info({ session: caller.sessionId, open: this.streams.size }, 'mcp notification stream opened');
  }

  /** Tells every open stream that the tool list changed. */
  notifyToolsChanged(): void {
    for (const stream of this.streams) {
      if (!this.options.isSessionOpen(stream.sessionId)) this.end(stream);
      else stream.response.write(TOOLS_LIST_CHANGED);
    }
  }

  /** Ends every stream of a session (revoked or expired). */
  endSession(sessionId: string): void {
    for (const stream of this.streams) if (stream.sessionId === sessionId) this.end(stream);
  }

  /** Ends every stream (shutdown). */
  closeAll(): void {
    for (const stream of this.streams) this.end(stream);
  }

  private end(stream: OpenStream): void {
    this.forget(stream);
    if (!stream.response.writableEnded) stream.response.end();
  }

  private forget(stream: OpenStream): void {
    if (!this.streams.delete(stream)) return;
    clearInterval(stream.keepAlive);
    if (stream.expiry) clearTimeout(stream.expiry);
    this.options.logger.debug({ session: stream.sessionId, open: this.streams.size }, 'mcp notification stream closed');
  }
}
