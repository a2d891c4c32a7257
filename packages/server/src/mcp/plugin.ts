import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler } from '@modelcontextprotocol/server';
import type { LoadedConfig } from '@gateway/core';
import { createCallPipeline, type PersonActionGate } from '../calls/pipeline.js';
import type { RequestStates } from '../calls/request-states.js';
import type { CallTelemetry } from '../calls/call-telemetry.js';
import type { Executor } from '../execute/executor.js';
import type { ReceiptLog } from '../receipts/log.js';
import { BUSY_RETRY_AFTER_SECONDS, isDatabaseBusy } from '../store/sqlite/database.js';
import type { PublicationRegistry } from '../publications/registry.js';
import type { McpAuthorizer } from '../calls/caller.js';
import { createCallRefusals } from './call-refusals.js';
import { DEFAULT_SSE_KEEP_ALIVE_MS, type FastRequest } from './fast-path.js';
import { createFastServer } from './fast-serve.js';
import { databaseBusyJsonRpcText, installJsonBodyParser, isJsonObject } from './json-rpc.js';
import { NotificationStreams } from './notification-streams.js';
import type { OriginGuard } from './origin.js';
import { handleMcpRequest, type McpRoute } from './request.js';
import { mcpServerFactory } from './sdk-server.js';
import { DEFAULT_TOOLS_PAGE_SIZE } from './tools.js';

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
   * Sources of "a person must act first" besides the core rules: the per-person logins' gate
   * (credentials/person/gate.ts), and in tests test/support/person-action-gate.ts.
   */
  personActionGates?: readonly PersonActionGate[];
  /** Metrics and traces of every call (telemetry/), told by the pipeline. */
  telemetry?: CallTelemetry;
}

export const DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024;

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

    const serveFast = createFastServer({
      registry,
      pipeline,
      logger,
      serverInfo,
      pageSize,
      listTtlMs,
      ...(options.onFastPathServed ? { onFastPathServed: options.onFastPathServed } : {}),
    });
    const refusals = createCallRefusals(authorizer, pipeline);
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

    installJsonBodyParser(fastify, maxRequestBytes);

    const route: McpRoute = { guard, authorizer, logger, streams, serveFast: isFastPathOn ? serveFast : undefined, refusals, node };
    fastify.route({
      method: ['POST', 'GET', 'DELETE'],
      url: '/mcp',
      bodyLimit: maxRequestBytes,
      handler: (request, reply) => handleMcpRequest(route, request, reply),
    });
  };
}
