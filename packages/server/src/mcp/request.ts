/**
 * One `/mcp` request, in the order the checks run: Host and Origin, authentication (an ended session's call is
 * still receipted), the JSON body, the re-approval challenge, then the 2025-11-25 GET stream, the fast path, or
 * the SDK. Protocol only: what a call may do is the pipeline's decision.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { ProtocolErrorCode, type AuthInfo } from '@modelcontextprotocol/server';
import type { McpAuthorizer, McpCaller } from '../calls/caller.js';
import type { CallRefusals } from './call-refusals.js';
import { fastRequestOf } from './fast-path.js';
import type { ServeFast } from './fast-serve.js';
import { INVALID_JSON, jsonRpcError, MAX_MCP_BODY_DEPTH, TOO_DEEP } from './json-rpc.js';
import type { NotificationStreams } from './notification-streams.js';
import type { OriginGuard } from './origin.js';
import type { CallerAuthInfo } from './sdk-server.js';

/** What the `/mcp` route serves with, made once by the plugin. */
export interface McpRoute {
  guard: OriginGuard;
  authorizer: McpAuthorizer;
  logger: FastifyBaseLogger;
  streams: NotificationStreams;
  /** Absent when the fast path is off. */
  serveFast: ServeFast | undefined;
  refusals: CallRefusals;
  /** The SDK's handler (both eras). */
  node: (request: IncomingMessage, response: ServerResponse, body?: unknown) => Promise<void>;
}

export async function handleMcpRequest(route: McpRoute, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const hostProblem = route.guard.checkHost(request.headers.host);
  if (hostProblem) {
    route.logger.info({ status: 403, reason: 'host' }, 'mcp request refused');
    return jsonRpcError(reply, 403, -32000, `Forbidden: ${hostProblem}`);
  }
  const originProblem = route.guard.checkOrigin(request.headers.origin);
  if (originProblem) {
    route.logger.info({ status: 403, reason: 'origin' }, 'mcp request refused');
    return jsonRpcError(reply, 403, -32000, `Forbidden: ${originProblem}`);
  }

  // Every request authenticates first; a refusal goes out exactly as the authorizer wrote it.
  const authentication = await route.authorizer.authenticate({ headers: request.headers });
  if (!authentication.ok) {
    route.logger.info(
      {
        status: authentication.status,
        reason: authentication.reason ?? 'authentication',
        session: authentication.endedSession?.sessionId,
      },
      'mcp request refused',
    );
    if (authentication.endedSession) void route.refusals.receiptCallOnEndedSession(request.body, authentication.endedSession);
    return reply.code(authentication.status).headers(authentication.headers).send(authentication.body);
  }
  if (request.body === INVALID_JSON) {
    route.logger.info({ status: 400, reason: 'invalid JSON' }, 'mcp request refused');
    return jsonRpcError(reply, 400, ProtocolErrorCode.ParseError, 'Parse error: invalid JSON');
  }
  if (request.body === TOO_DEEP) {
    route.logger.info({ status: 400, reason: 'nesting' }, 'mcp request refused');
    return jsonRpcError(
      reply,
      400,
      ProtocolErrorCode.InvalidRequest,
      `Invalid Request: the body nests arrays and objects deeper than ${MAX_MCP_BODY_DEPTH} levels`,
    );
  }

  const caller = authentication.caller;
  const checking = route.refusals.staleApprovalRefusal(request.body, caller);
  const stale = checking instanceof Promise ? await checking : checking;
  if (stale.refusal) {
    const refusal = stale.refusal;
    route.logger.info({ status: refusal.status, reason: 'approval changed', session: caller.sessionId }, 'mcp request refused');
    return reply.code(refusal.status).headers(refusal.headers).send(refusal.body);
  }
  if (request.method === 'GET') return openNotificationStream(route, request, reply, caller);
  if (route.serveFast) {
    const fast = fastRequestOf(request.method, request.headers, request.body);
    if (fast && (await route.serveFast(fast, caller, reply, stale.decision))) return;
  }
  const authInfo: CallerAuthInfo = {
    token: '',
    clientId: caller.clientId,
    scopes: [],
    expiresAt: Math.floor(caller.expiresAt / 1000),
    extra: { caller, body: request.method === 'POST' ? request.body : undefined },
  };
  (request.raw as { auth?: AuthInfo }).auth = authInfo;
  const started = performance.now();
  const rpcMethod = (request.body as { method?: unknown } | undefined)?.method;
  reply.raw.once('finish', () => {
    route.logger.info(
      {
        method: request.method,
        rpcMethod: typeof rpcMethod === 'string' ? rpcMethod : undefined,
        status: reply.raw.statusCode,
        session: caller.sessionId,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
      },
      'mcp request',
    );
  });
  reply.hijack();
  await route.node(request.raw, reply.raw, request.method === 'POST' ? request.body : undefined);
}

/**
 * `GET /mcp` (MCP 2025-11-25 › Listening for Messages): the authenticated caller's stream of
 * `notifications/tools/list_changed`. A 2026-07-28 request gets 405 (that era has no GET stream).
 */
export function openNotificationStream(route: McpRoute, request: FastifyRequest, reply: FastifyReply, caller: McpCaller) {
  const version = request.headers['mcp-protocol-version'];
  if (typeof version === 'string' && version >= '2026-07-28') {
    return jsonRpcError(reply, 405, -32000, 'Method Not Allowed: 2026-07-28 clients use subscriptions/listen', { allow: 'POST' });
  }
  const accept = String(request.headers.accept ?? '');
  if (!/(^|,)\s*(text\/event-stream|text\/\*|\*\/\*)\s*(;|,|$)/i.test(accept)) {
    return jsonRpcError(reply, 406, -32000, 'Not Acceptable: GET /mcp opens a stream; send Accept: text/event-stream');
  }
  if (!route.streams.hasRoom()) {
    route.logger.warn({ open: route.streams.size }, 'mcp notification stream refused: the gateway holds its maximum of open streams');
    return jsonRpcError(reply, 503, -32000, 'Service Unavailable: too many open notification streams; try again later', {
      'retry-after': '30',
    });
  }
  reply.hijack();
  route.streams.open(caller, reply.raw);
  return reply;
}
