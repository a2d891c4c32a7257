import type { FastifyBaseLogger, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type AuthInfo,
  type CallToolResult,
  type ListToolsResult,
  type McpRequestContext,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { LoadedConfig } from '@gateway/core';
import { createCallPipeline, type CallAnswer, type CallDecision, type CallPipeline, type PersonActionGate } from '../calls/pipeline.js';
import type { RequestStates } from '../calls/request-states.js';
import type { CallTelemetry } from '../calls/call-telemetry.js';
import type { Executor } from '../execute/executor.js';
import type { ReceiptLog } from '../receipts/log.js';
import { BUSY_RETRY_AFTER_SECONDS, databaseBusyError, isDatabaseBusy } from '../store/sqlite/database.js';
import type { PublicationRegistry } from '../publications/registry.js';
import type { McpAuthentication, McpAuthorizer, McpCaller } from '../calls/caller.js';
import {
  DEFAULT_SSE_KEEP_ALIVE_MS,
  encodeModernResult,
  fastRequestOf,
  legacyCallToolResult,
  legacyInitializeResultText,
  legacyToolsListResultText,
  modernCallToolResult,
  writeJsonRpcResult,
  writeJsonRpcText,
  writeToolsListResult,
  type FastRequest,
} from './fast-path.js';
import { exceedsJsonDepth } from './json-depth.js';
import { NotificationStreams } from './notification-streams.js';
import { progressForwarder } from './progress.js';
import type { OriginGuard } from './origin.js';
import { decodeCursor, DEFAULT_TOOLS_PAGE_SIZE, listToolsPage } from './tools.js';

export interface McpPluginOptions {
  authorizer: McpAuthorizer;
  registry: PublicationRegistry;
  executor: Executor;
  /** The receipt log every call is recorded in (absent: no receipts, e.g. `receipts.enabled: false`). */
  receipts?: ReceiptLog;
  /** The config, for the login check before execution (calls/pipeline.ts). */
  loaded?: LoadedConfig;
  guard: OriginGuard;
  /** Largest accepted POST body (gateway.maxRequestBytes; default 1 MiB). */
  maxRequestBytes?: number;
  /** Tools per `tools/list` page (default 1000). */
  pageSize?: number;
  /**
   * `ttlMs` on `tools/list` (MCP 2026-07-28 Caching). The list varies with the session and with drift, so
   * the default is 0 (revalidate every time) and the scope always `private`.
   */
  listTtlMs?: number;
  serverInfo?: { name: string; version: string };
  /**
   * Answer plain `tools/call` and `tools/list` requests of both eras (and the 2025-11-25 `initialize` and
   * `notifications/initialized`) without the SDK's per-request machinery (mcp/fast-path.ts). Default true;
   * tests turn it off to compare both paths.
   */
  fastPath?: boolean;
  /**
   * Interval of the `: keepalive` comments on the SDK path's 2025-11-25 SSE answers (default 15 s, the SDK's
   * own default; tests shorten it to see the comments). The fast path answers that era as JSON.
   */
  sseKeepAliveMs?: number;
  /** Limits of the 2025-11-25 `GET /mcp` notification streams (mcp/notification-streams.ts). */
  notificationStreams?: { maxPerSession?: number; maxTotal?: number; keepAliveMs?: number };
  /** Told about each request the fast path answered (tests use it to prove which path served what). */
  onFastPathServed?: (method: FastRequest['method']) => void;
  /** Seals and checks the `requestState` of "a person must act first" answers (the gateway's key from the vault). */
  requestStates?: RequestStates;
  /**
   * TEST HARNESS ONLY: extra sources of "a person must act first" (test/support/person-action-gate.ts), so both
   * eras' encodings are exercised end to end until OAuth per person and one-call approvals supply real ones.
   */
  personActionGates?: readonly PersonActionGate[];
  /** Metrics and traces of every call (telemetry/), told by the pipeline. */
  telemetry?: CallTelemetry;
}

export const DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024;

/** What the gateway's MCP server offers (the SDK's `Server` and the fast path's `initialize` answer share it). */
const SERVER_CAPABILITIES = { tools: { listChanged: true } };

/**
 * Deepest nesting of arrays and objects accepted in an `/mcp` body (the JSON-RPC envelope counts: a tool's
 * arguments sit at level 3). Deeper bodies are refused before anything recursive (the SDK's schema parsing,
 * argument validation, serialisation) touches them, which would otherwise overflow the stack.
 */
export const MAX_MCP_BODY_DEPTH = 128;

const INVALID_JSON = Symbol('invalid JSON body');
const TOO_DEEP = Symbol('JSON body nested too deeply');

/** Requests parked while the plugin shuts down are refused with this. */
function jsonRpcError(reply: FastifyReply, status: number, code: number, message: string, headers: Record<string, string> = {}) {
  return reply
    .code(status)
    .headers({ 'content-type': 'application/json', ...headers })
    .send({ jsonrpc: '2.0', error: { code, message }, id: null });
}

/**
 * A database still busy after the wait bound (DATABASE_BUSY): HTTP 503 with `Retry-After` and a JSON-RPC error
 * body, as for every other transient refusal of /mcp, so clients retry instead of treating it as a failure.
 */
function databaseBusyJsonRpcText(id: unknown, cause: unknown): string {
  const message = `Service Unavailable: ${databaseBusyError(cause).message}`;
  return JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error: { code: -32000, message, data: { code: 'DATABASE_BUSY' } } });
}

function writeDatabaseBusy(response: ServerResponse, id: unknown, cause: unknown): void {
  response.writeHead(503, { 'content-type': 'application/json', 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) });
  response.end(databaseBusyJsonRpcText(id, cause));
}

export interface CallerAuthInfo extends AuthInfo {
  /** `body`: the POST body as JSON.parse read it, for the arguments the SDK's schema parsing would alter. */
  extra: { caller: McpCaller; body?: unknown };
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The tool name, arguments and retry state of a `tools/call` request body (as sent); undefined for any other body. */
function toolsCallOf(body: unknown): { name: string; argumentsValue: unknown; requestState: string | undefined } | undefined {
  if (!isJsonObject(body) || body.method !== 'tools/call' || !isJsonObject(body.params)) return undefined;
  const name = body.params.name;
  if (typeof name !== 'string') return undefined;
  const requestState = typeof body.params.requestState === 'string' ? body.params.requestState : undefined;
  return { name, argumentsValue: sentArguments(body, body.id, name, body.params.arguments) ?? {}, requestState };
}

/**
 * "A person must act first", encoded for the era of the request (docs/server.md › A person must act first).
 * 2026-07-28 with the `elicitation.url` capability in the request's envelope: an `input_required` result
 * whose one input request is a URL elicitation, and the `requestState` the retry echoes. 2025-11-25, and
 * 2026-07-28 clients without that capability: the URL-elicitation-required error (-32042) naming the same
 * URL; the client retries once the person is done. A re-approval that reached the SDK (no step-up challenge
 * configured) stays the in-band -32602 "approve it again".
 */
function encodePersonAction(answer: Extract<CallAnswer, { kind: 'act' }>, context: ServerContext): CallToolResult {
  if (answer.action.kind !== 'visit') throw new ProtocolError(ProtocolErrorCode.InvalidParams, answer.message);
  const elicitation = { mode: 'url' as const, message: answer.message, url: answer.action.url, elicitationId: answer.elicitationId! };
  const envelope = context.mcpReq.envelope;
  const capabilities = (envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
    | { elicitation?: { url?: unknown } }
    | undefined;
  if (envelope !== undefined && capabilities?.elicitation?.url !== undefined) {
    // 2026-07-28: the input request's key is its id (the era's embedded URL elicitation has no elicitationId).
    const { elicitationId, ...params } = elicitation;
    return {
      resultType: 'input_required',
      inputRequests: { [elicitationId]: { method: 'elicitation/create', params } },
      requestState: answer.requestState!,
    } as unknown as CallToolResult;
  }
  // Not a ProtocolError: the SDK turns a thrown UrlElicitationRequiredError into an internal error on the
  // 2026-07-28 era; an error carrying the code and data is sent as they are, in both eras.
  throw Object.assign(new Error(answer.message), { code: ProtocolErrorCode.UrlElicitationRequired, data: { elicitations: [elicitation] } });
}

/**
 * The `tools/call` arguments exactly as the client sent them. The SDK parses `arguments` as a record, which
 * skips a `__proto__` key; argument names come from documents, so the gateway reads them from the body itself
 * when it is this very request (same id and tool name).
 */
function sentArguments(body: unknown, id: unknown, name: string, parsed: unknown): unknown {
  if (!isJsonObject(body) || body.method !== 'tools/call' || body.id !== id) return parsed;
  const params = body.params;
  if (!isJsonObject(params) || params.name !== name || !isJsonObject(params.arguments)) return parsed;
  return params.arguments;
}

export interface McpServerFactoryOptions {
  registry: PublicationRegistry;
  pipeline: CallPipeline;
  logger: FastifyBaseLogger;
  serverInfo: { name: string; version: string };
  pageSize: number;
  listTtlMs: number;
}

/**
 * The SDK `Server` of one `/mcp` request: `tools/list` and `tools/call` over the index and the call pipeline.
 * Exported so the tests can serve the very same handlers through an SDK transport set up differently (the
 * fast path's 2025-11-25 JSON answers are compared with the SDK transport's own, mcp/fast-path.test.ts).
 */
export function mcpServerFactory(options: McpServerFactoryOptions): (context: McpRequestContext) => Server {
  const { registry, pipeline, logger, serverInfo, pageSize, listTtlMs } = options;
  return (context: McpRequestContext): Server => {
    const caller = (context.authInfo as CallerAuthInfo | undefined)?.extra?.caller;
    const body = (context.authInfo as CallerAuthInfo | undefined)?.extra?.body;
    if (!caller) throw new Error('an /mcp request reached the MCP layer without an authenticated caller');
    // The snapshot this request works on: a reload during the call does not change it.
    const snapshot = registry.snapshot();
    const server = new Server(serverInfo, {
      capabilities: SERVER_CAPABILITIES,
      cacheHints: {
        // MCP 2026-07-28 Caching: the list depends on the session, so it must never be shared.
        'tools/list': { ttlMs: listTtlMs, cacheScope: 'private' },
        'server/discover': { ttlMs: listTtlMs, cacheScope: 'private' },
      },
    });
    server.setRequestHandler('tools/list', async (request) => {
      return listToolsPage(snapshot, registry, caller, request.params?.cursor, pageSize) as ListToolsResult;
    });
    server.setRequestHandler('tools/call', async (request, handlerContext) => {
      const name = request.params.name;
      const argumentsValue = sentArguments(body, handlerContext.mcpReq.id, name, request.params.arguments);
      const progress = progressForwarder(handlerContext, (error) =>
        logger.debug({ tool: name, error: error.message }, 'progress not delivered'),
      );
      const requestState = handlerContext.mcpReq.requestState();
      const { answer } = await pipeline.callTool(
        caller,
        name,
        argumentsValue ?? {},
        handlerContext.mcpReq.signal,
        undefined,
        progress.onProgress,
        typeof requestState === 'string' ? requestState : undefined,
      );
      await progress.settled();
      // MCP Tools › Error Handling: unknown tools (and tools outside the session) are a protocol error (-32602).
      if (answer.kind === 'invalid-params') throw new ProtocolError(ProtocolErrorCode.InvalidParams, answer.message);
      if (answer.kind === 'act') return encodePersonAction(answer, handlerContext);
      // The SDK's era codec: on 2025-11-25 a non-object structuredContent is wrapped as { result }.
      return server.projectCallToolResult(answer.result as CallToolResult, undefined);
    });
    return server;
  };
}

/**
 * `/mcp`: both MCP eras on one endpoint through the SDK's `createMcpHandler` (2026-07-28 stateless with
 * `server/discover`; 2025-11-25 `initialize` served statelessly). In front of the SDK, which validates no
 * Host, Origin or token (SDK v2 docs › Serve over HTTP): Host and Origin checks, the body limit, and
 * authentication through the authorizer. Tools come from the in-memory index; nothing is registered per tool.
 */
export function createMcpPlugin(options: McpPluginOptions): FastifyPluginAsync {
  const pageSize = options.pageSize ?? DEFAULT_TOOLS_PAGE_SIZE;
  const listTtlMs = options.listTtlMs ?? 0;
  const serverInfo = options.serverInfo ?? { name: 'governed-tool-gateway', version: '0.1.0' };
  const maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  const { registry, executor, authorizer, guard } = options;
  const isFastPathOn = options.fastPath ?? true;
  const listCacheHint = { ttlMs: listTtlMs, cacheScope: 'private' as const };
  const sseKeepAliveMs = options.sseKeepAliveMs ?? DEFAULT_SSE_KEEP_ALIVE_MS;

  return async function mcpPlugin(fastify) {
    const logger: FastifyBaseLogger = fastify.log;
    fastify.setErrorHandler((error, request, reply) => {
      if (!isDatabaseBusy(error)) throw error;
      logger.warn({ code: 'DATABASE_BUSY', error: (error as Error).message }, 'database busy; /mcp answered 503');
      const id = isJsonObject(request.body) ? request.body.id : null;
      return reply
        .code(503)
        .headers({ 'content-type': 'application/json', 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) })
        .send(databaseBusyJsonRpcText(id, error));
    });
    // Both /mcp paths and both eras call tools through this one pipeline (decide → execute → receipt).
    const pipeline = createCallPipeline({
      registry,
      authorizer,
      executor,
      receipts: options.receipts,
      logger,
      ...(options.loaded ? { loaded: options.loaded } : {}),
      ...(options.requestStates ? { requestStates: options.requestStates } : {}),
      ...(options.personActionGates ? { gates: options.personActionGates } : {}),
      ...(options.telemetry ? { telemetry: options.telemetry } : {}),
    });

    /**
     * Serves a fast-path request when it would succeed; returns false (nothing written) when the SDK
     * must answer it instead: an invalid cursor, a tool the caller may not call, a session that ended, a
     * 2025-11-25 call of an MCP source's tool (its blocks pass through whole, and the SDK's era schema
     * reorders and strips their members: only the SDK knows that schema exactly).
     */
    async function serveFast(
      fast: FastRequest,
      caller: McpCaller,
      reply: FastifyReply,
      decided: CallDecision | undefined,
    ): Promise<boolean> {
      if (fast.method === 'notifications/initialized') {
        // The SDK's stateless legacy transport accepts a notification with an empty 202 and nothing else.
        options.onFastPathServed?.(fast.method);
        reply.hijack();
        reply.raw.writeHead(202, {});
        reply.raw.end();
        return true;
      }
      if (fast.method === 'initialize') {
        options.onFastPathServed?.(fast.method);
        reply.hijack();
        // 2025-11-25 requests on the fast path are answered as JSON, not SSE (mcp/fast-path.ts says why).
        writeJsonRpcText(reply.raw, legacyInitializeResultText(fast.id, fast.protocolVersion, SERVER_CAPABILITIES, serverInfo));
        return true;
      }
      const snapshot = registry.snapshot();
      if (fast.method === 'tools/list') {
        if (fast.cursor) {
          try {
            decodeCursor(fast.cursor);
          } catch {
            return false;
          }
        }
        const page = listToolsPage(snapshot, registry, caller, fast.cursor, pageSize);
        // The 2025-11-25 codec rewrites tools with an `outputSchema` (none today): the SDK lists those.
        if (fast.era === 'legacy' && page.tools.some((tool) => Object.hasOwn(tool, 'outputSchema'))) return false;
        options.onFastPathServed?.(fast.method);
        reply.hijack();
        if (fast.era === 'modern') writeToolsListResult(reply.raw, fast.id, page, serverInfo, listCacheHint);
        else writeJsonRpcText(reply.raw, legacyToolsListResultText(fast.id, page));
        return true;
      }
      // A call the pipeline would refuse goes to the SDK, which answers (and receipts) it: the SDK stays
      // the single author of protocol errors, and refusals are rare enough not to need the fast path.
      // The re-approval check already decided this very call (one session lookup fewer per call).
      const decision = decided?.name === fast.name ? decided : pipeline.decide(caller, fast.name);
      if (decision.verdict.kind !== 'allow') return false;
      if (fast.era === 'legacy' && decision.tool?.kind === 'mcp') return false;
      options.onFastPathServed?.(fast.method);
      reply.hijack();
      const response = reply.raw;
      // The client going away cancels the upstream request, as the SDK's request signal does.
      const cancel = new AbortController();
      const onClose = () => {
        if (!response.writableFinished) cancel.abort();
      };
      response.once('close', onClose);
      let body: Record<string, unknown>;
      try {
        const { answer } = await pipeline.callTool(caller, fast.name, fast.arguments ?? {}, cancel.signal, decision);
        // An allowed decision always ends in a tool result (refusals are decided above).
        const result = (answer as Extract<CallAnswer, { kind: 'result' }>).result;
        body = fast.era === 'legacy' ? legacyCallToolResult(result) : encodeModernResult(modernCallToolResult(result), serverInfo);
      } catch (error) {
        // What the SDK answers for a handler that throws: an in-band internal error.
        logger.error({ tool: fast.name, error: (error as Error).message }, 'tool call failed');
        response.off('close', onClose);
        if (!response.destroyed && !response.headersSent && isDatabaseBusy(error)) {
          writeDatabaseBusy(response, fast.id, error);
          return true;
        }
        if (!response.destroyed) {
          const code = ProtocolErrorCode.InternalError;
          writeJsonRpcText(
            response,
            JSON.stringify({ jsonrpc: '2.0', id: fast.id, error: { code, message: (error as Error).message ?? 'Internal error' } }),
          );
        }
        return true;
      }
      response.off('close', onClose);
      if (!cancel.signal.aborted && !response.destroyed) writeJsonRpcResult(response, fast.id, body);
      return true;
    }

    /**
     * Re-approval (docs/authorization.md): when the decision answers "a person must act first: approve again"
     * (the operation changed since the person approved it), this is that answer's encoding: the authorizer's
     * step-up challenge (403 insufficient_scope) at the HTTP layer, which SDK clients answer by authorizing
     * again. Any other decision (or an authorizer without such a challenge: then the in-band "approve it again"
     * refusal stays) is handed on, so the fast path does not decide the same call twice.
     */
    async function staleApprovalRefusal(
      body: unknown,
      caller: McpCaller,
    ): Promise<{ refusal: McpAuthentication & { ok: false } } | { refusal: undefined; decision: CallDecision | undefined }> {
      if (!authorizer.challengeStaleApproval) return { refusal: undefined, decision: undefined };
      const call = toolsCallOf(body);
      if (!call) return { refusal: undefined, decision: undefined };
      // The one pipeline decides (core policy); a "re-approve" answer is encoded as the challenge and receipted
      // like every other answer (`action-required`).
      const decision = pipeline.decide(caller, call.name, call.argumentsValue, call.requestState);
      const { verdict } = decision;
      if (verdict.kind !== 'act' || verdict.action.kind !== 'reapprove') return { refusal: undefined, decision };
      // Durable when refuse returns; the challenge need not wait for the database.
      void pipeline.refuse(caller, decision, call.argumentsValue);
      return { refusal: await authorizer.challengeStaleApproval(caller, [call.name]) };
    }

    /**
     * A `tools/call` whose token this gateway issued for a session that has ended (revoked or expired): the
     * client gets the authorizer's 401 (MCP › Authorization: invalid or expired tokens get 401), and the call
     * is still decided and receipted as denied (SESSION_REVOKED / SESSION_EXPIRED) through the one pipeline,
     * with its event. Other methods on such a token, and requests without a usable token, leave no receipt.
     */
    function receiptCallOnEndedSession(body: unknown, caller: McpCaller): void {
      const call = toolsCallOf(body);
      if (!call) return;
      const decision = pipeline.decide(caller, call.name);
      // The session has ended, so the decision refuses; durable when refuse returns.
      if (decision.verdict.kind !== 'allow') void pipeline.refuse(caller, decision, call.argumentsValue);
    }

    /**
     * `GET /mcp` (MCP 2025-11-25 › Listening for Messages): the authenticated caller's stream of
     * `notifications/tools/list_changed`. A 2026-07-28 request gets 405 (that era has no GET stream).
     */
    function openNotificationStream(request: FastifyRequest, reply: FastifyReply, caller: McpCaller) {
      const version = request.headers['mcp-protocol-version'];
      if (typeof version === 'string' && version >= '2026-07-28') {
        return jsonRpcError(reply, 405, -32000, 'Method Not Allowed: 2026-07-28 clients use subscriptions/listen', { allow: 'POST' });
      }
      const accept = String(request.headers.accept ?? '');
      if (!/(^|,)\s*(text\/event-stream|text\/\*|\*\/\*)\s*(;|,|$)/i.test(accept)) {
        return jsonRpcError(reply, 406, -32000, 'Not Acceptable: GET /mcp opens a stream; send Accept: text/event-stream');
      }
      if (!streams.hasRoom()) {
        logger.warn({ open: streams.size }, 'mcp notification stream refused: the gateway holds its maximum of open streams');
        return jsonRpcError(reply, 503, -32000, 'Service Unavailable: too many open notification streams; try again later', {
          'retry-after': '30',
        });
      }
      reply.hijack();
      streams.open(caller, reply.raw);
      return reply;
    }

    const factory = mcpServerFactory({ registry, pipeline, logger, serverInfo, pageSize, listTtlMs });

    const handler = createMcpHandler(factory, {
      legacy: 'stateless',
      keepAliveMs: sseKeepAliveMs,
      maxRequestBodySize: maxRequestBytes,
      onerror: (error) => logger.debug({ error: error.message }, 'mcp request rejected'),
    });
    const node = toNodeHandler(handler, {
      maxRequestBodySize: maxRequestBytes,
      onerror: (error) => logger.error({ error: error.message }, 'mcp handler failed'),
    });

    // List changes go to 2026-07-28 `subscriptions/listen` streams (the SDK's) and to 2025-11-25 GET streams.
    const streams = new NotificationStreams({
      logger,
      isSessionOpen: (sessionId) => authorizer.sessionState(sessionId) === 'open',
      ...options.notificationStreams,
    });
    const unsubscribe = registry.onChange(() => {
      handler.notify.toolsChanged();
      streams.notifyToolsChanged();
    });
    const unsubscribeSessions = authorizer.onSessionEnded?.((sessionId) => streams.endSession(sessionId));
    // Before the server stops accepting: open streams would otherwise hold the shutdown for its whole grace.
    fastify.addHook('preClose', async () => streams.closeAll());
    fastify.addHook('onClose', async () => {
      unsubscribe();
      unsubscribeSessions?.();
      await handler.close();
    });

    // Parse JSON ourselves so malformed JSON is a JSON-RPC parse error (-32700), not Fastify's own 400.
    fastify.removeContentTypeParser(['application/json']);
    fastify.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: maxRequestBytes }, (_request, body, done) => {
      try {
        // A cheap scan of the raw text, before JSON.parse and everything after it.
        if (exceedsJsonDepth(body as string, MAX_MCP_BODY_DEPTH)) done(null, TOO_DEEP);
        else done(null, JSON.parse(body as string));
      } catch {
        done(null, INVALID_JSON);
      }
    });

    fastify.route({
      method: ['POST', 'GET', 'DELETE'],
      url: '/mcp',
      bodyLimit: maxRequestBytes,
      handler: async (request, reply) => {
        const hostProblem = guard.checkHost(request.headers.host);
        if (hostProblem) {
          logger.info({ status: 403, reason: 'host' }, 'mcp request refused');
          return jsonRpcError(reply, 403, -32000, `Forbidden: ${hostProblem}`);
        }
        const originProblem = guard.checkOrigin(request.headers.origin);
        if (originProblem) {
          logger.info({ status: 403, reason: 'origin' }, 'mcp request refused');
          return jsonRpcError(reply, 403, -32000, `Forbidden: ${originProblem}`);
        }

        // Every request authenticates first; a refusal goes out exactly as the authorizer wrote it.
        const authentication = await authorizer.authenticate({ headers: request.headers });
        if (!authentication.ok) {
          logger.info(
            {
              status: authentication.status,
              reason: authentication.reason ?? 'authentication',
              session: authentication.endedSession?.sessionId,
            },
            'mcp request refused',
          );
          if (authentication.endedSession) receiptCallOnEndedSession(request.body, authentication.endedSession);
          return reply.code(authentication.status).headers(authentication.headers).send(authentication.body);
        }
        if (request.body === INVALID_JSON) {
          logger.info({ status: 400, reason: 'invalid JSON' }, 'mcp request refused');
          return jsonRpcError(reply, 400, ProtocolErrorCode.ParseError, 'Parse error: invalid JSON');
        }
        if (request.body === TOO_DEEP) {
          logger.info({ status: 400, reason: 'nesting' }, 'mcp request refused');
          return jsonRpcError(
            reply,
            400,
            ProtocolErrorCode.InvalidRequest,
            `Invalid Request: the body nests arrays and objects deeper than ${MAX_MCP_BODY_DEPTH} levels`,
          );
        }

        const caller = authentication.caller;
        const stale = await staleApprovalRefusal(request.body, caller);
        if (stale.refusal) {
          const refusal = stale.refusal;
          logger.info({ status: refusal.status, reason: 'approval changed', session: caller.sessionId }, 'mcp request refused');
          return reply.code(refusal.status).headers(refusal.headers).send(refusal.body);
        }
        if (request.method === 'GET') return openNotificationStream(request, reply, caller);
        if (isFastPathOn) {
          const fast = fastRequestOf(request.method, request.headers, request.body);
          if (fast && (await serveFast(fast, caller, reply, stale.decision))) return;
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
          logger.info(
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
        await node(request.raw, reply.raw, request.method === 'POST' ? request.body : undefined);
      },
    });
  };
}
