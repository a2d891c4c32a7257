import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { LoadedConfig } from '@gateway/core';
import { compileAllowList, isAddressInRanges } from '@gateway/runtime';
import type { Executor } from './execute/executor.js';
import type { McpAuthorizer } from './calls/caller.js';
import { createOriginGuard, type OriginGuard } from './mcp/origin.js';
import { createMcpPlugin, DEFAULT_MAX_REQUEST_BYTES } from './mcp/plugin.js';
import type { PublicationRegistry } from './publications/registry.js';
import type { ReceiptLog } from './receipts/log.js';
import { answerFrameworkError, answerRequestErrors, MAX_PATH_PARAMETER_LENGTH } from './http/errors.js';
import { addProblemReplies } from './http/problem.js';
import { recordRoutes } from './http/route-inventory.js';
import type { PersonActionGate } from './calls/pipeline.js';
import type { RequestStates } from './calls/request-states.js';
import type { CallTelemetry } from './calls/call-telemetry.js';

export interface BuildAppOptions {
  loaded: LoadedConfig;
  /** The canonical `/mcp` URL. */
  mcpUrl: string;
  authorizer: McpAuthorizer;
  /** The authorization server: OAuth endpoints, sign-in and consent (auth/index.ts). */
  authPlugin?: FastifyPluginAsync;
  /** The admin API (`gateway status`). */
  adminPlugin?: FastifyPluginAsync;
  /** The operator console (`/console`, console/index.ts). */
  consolePlugin?: FastifyPluginAsync;
  registry: PublicationRegistry;
  executor: Executor;
  /** The receipt log every tool call is recorded in (absent: no receipts). */
  receipts?: ReceiptLog;
  /** A pino logger (redaction configured by the caller), or false for none. */
  logger: FastifyBaseLogger | false;
  /** TLS material; absent means plain HTTP (the composition root allows that on loopback only). */
  https?: { cert: Buffer | string; key: Buffer | string };
  /** True when listening on a loopback address (loopback spellings of Host/Origin are then accepted). */
  isLoopbackListener: boolean;
  /** The port listened on, for the loopback Host/Origin spellings. */
  listenPort?: number;
  /** The Host/Origin guard (built from the options above when absent); the admin API shares it. */
  guard?: OriginGuard;
  /** Tools per `tools/list` page. */
  toolsPageSize?: number;
  /** `ttlMs` of `tools/list`. */
  toolsListTtlMs?: number;
  /** Seals the `requestState` of "a person must act first" answers (calls/request-states.ts). */
  requestStates?: RequestStates;
  /** Sources of "a person must act first" (McpPluginOptions.personActionGates). */
  personActionGates?: readonly PersonActionGate[];
  /** Metrics and traces (telemetry/): its hooks on every route, and what the call pipeline tells it. */
  telemetry?: { install(app: FastifyInstance): void; calls: CallTelemetry };
}

/**
 * `/mcp` takes JSON-RPC (POST), opens a notification stream (GET) and ends a session (DELETE). Its bodies are
 * checked by the MCP layer, which answers in JSON-RPC (a parse error, an invalid request), and its headers by the
 * authorizer and the SDK: the schema declares only that the route takes no query parameters (Fastify allows no
 * body schema on a route that also answers GET), so Fastify never refuses a JSON-RPC shape first and the hot path
 * validates nothing twice.
 */
const MCP_ROUTE_SCHEMA = {
  querystring: { type: 'object', description: 'no parameters; the JSON-RPC body and the headers are checked by the MCP layer' },
};

const HEALTH_SCHEMA = {
  querystring: { type: 'object' },
  response: { 200: { type: 'object', properties: { status: { type: 'string', const: 'ok' } }, required: ['status'] } },
} as const;

const READY_SCHEMA = {
  querystring: { type: 'object' },
  response: {
    200: {
      type: 'object',
      properties: { status: { type: 'string' }, generation: { type: 'integer' }, tools: { type: 'integer' } },
      required: ['status', 'generation', 'tools'],
    },
    503: { type: 'object', properties: { status: { type: 'string' }, reason: { type: 'string' } }, required: ['status', 'reason'] },
  },
} as const;

function isMcpPath(url: string | undefined): boolean {
  return url === '/mcp' || url?.startsWith('/mcp?') === true;
}

/**
 * /mcp writes its own concise lines (a tool call, a refusal, a method the SDK served) instead of Fastify's
 * "incoming request" and "request completed" pair: on the hot path a log line costs about as much as the
 * rest of the request. Errors on /mcp and every other route keep Fastify's logging.
 */
class McpQuietLogController extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (isMcpPath(request.url)) return;
    super.incomingRequest(request, reply, metadata);
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    metadata?: Record<string, unknown>,
  ): void {
    if (!error && isMcpPath(request.url)) return;
    super.requestCompleted(error, request, reply, metadata);
  }
}

/**
 * The Fastify application: one encapsulated plugin per area (`mcp`, auth, admin) plus the health routes.
 * It neither listens nor loads anything: the composition root (`gateway.ts`) does.
 */
export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const maxRequestBytes = options.loaded.config.gateway.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  // Behind a reverse proxy every request comes from the proxy: the per-address limits (sign-in, /authorize,
  // registration) would then count everyone together. X-Forwarded-For is believed only from the listed
  // proxies, walked from the right: the client address is the first hop that is not one of them.
  const proxies = compileAllowList(options.loaded.config.gateway.trustedProxies ?? [], 'gateway.trustedProxies');
  const base = {
    ...(proxies.entries.length > 0 ? { trustProxy: (address: string) => isAddressInRanges(address, proxies) } : {}),
    bodyLimit: maxRequestBytes,
    // Idle keep-alive sockets are closed at shutdown; busy ones finish their request first.
    forceCloseConnections: 'idle' as const,
    return503OnClosing: true,
    // A path Fastify cannot route (too long a segment, bad percent-encoding): problem+json, not its echo of the path.
    routerOptions: { maxParamLength: MAX_PATH_PARAMETER_LENGTH },
    frameworkErrors: answerFrameworkError,
    logController: new McpQuietLogController(),
    ...(options.logger === false ? { logger: false } : { loggerInstance: options.logger }),
  };
  const app = (options.https
    ? Fastify({ ...base, https: { cert: options.https.cert, key: options.https.key } })
    : Fastify(base)) as unknown as FastifyInstance;

  // Before any plugin is registered, so every area inherits them: the problem+json reply, the record of every
  // route and its schema (a test fails on a route without one), and the error handler (http/errors.ts). The areas
  // with a protocol of their own (OAuth, /mcp, admin) answer their errors in their own shape first.
  addProblemReplies(app);
  // /mcp validates its JSON-RPC bodies itself (the MCP layer answers -32700/-32600): its schema refuses nothing.
  app.addHook('onRoute', (route) => {
    if (route.url !== '/mcp' || route.schema !== undefined) return;
    route.schema = MCP_ROUTE_SCHEMA;
    // Declared, not compiled: a query schema that takes any object refuses nothing, and Fastify skips validation
    // only on a route with no compiled part (a few microseconds of every call otherwise: docs/performance.md).
    route.validatorCompiler = (() => undefined) as unknown as typeof route.validatorCompiler;
  });
  recordRoutes(app);
  answerRequestErrors(app);

  options.telemetry?.install(app);
  app.get('/healthz', { schema: HEALTH_SCHEMA }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: READY_SCHEMA }, async (_request, reply) => {
    const snapshot = options.registry.snapshot();
    if (!options.registry.isReady) return reply.code(503).send({ status: 'not ready', reason: 'no verified tools.lock is loaded' });
    return { status: 'ready', generation: snapshot.generation, tools: snapshot.names.length };
  });

  const guard =
    options.guard ??
    createOriginGuard({
      mcpUrl: options.mcpUrl,
      isLoopbackListener: options.isLoopbackListener,
      ...(options.listenPort === undefined ? {} : { listenPort: options.listenPort }),
      allowedOrigins: options.loaded.config.gateway.allowedOrigins ?? [],
    });
  await app.register(
    createMcpPlugin({
      authorizer: options.authorizer,
      registry: options.registry,
      executor: options.executor,
      ...(options.receipts ? { receipts: options.receipts } : {}),
      loaded: options.loaded,
      guard,
      maxRequestBytes,
      ...(options.toolsPageSize === undefined ? {} : { pageSize: options.toolsPageSize }),
      ...(options.toolsListTtlMs === undefined ? {} : { listTtlMs: options.toolsListTtlMs }),
      ...(options.requestStates ? { requestStates: options.requestStates } : {}),
      ...(options.personActionGates ? { personActionGates: options.personActionGates } : {}),
      ...(options.telemetry ? { telemetry: options.telemetry.calls } : {}),
    }),
  );
  if (options.authPlugin) await app.register(options.authPlugin);
  if (options.adminPlugin) await app.register(options.adminPlugin);
  if (options.consolePlugin) await app.register(options.consolePlugin);
  return app;
}

/**
 * Graceful shutdown: stop accepting connections, let requests in flight finish, then close. Keep-alive
 * sockets are closed as soon as they fall idle (otherwise a finished client keeps the server open until its
 * keep-alive timeout); sockets still busy after `graceMs` are cut.
 */
export async function closeGracefully(app: FastifyInstance, graceMs: number): Promise<void> {
  const sweeper = setInterval(() => app.server.closeIdleConnections(), 25);
  const deadline = setTimeout(() => app.server.closeAllConnections(), graceMs);
  sweeper.unref();
  deadline.unref();
  try {
    await app.close();
  } finally {
    clearInterval(sweeper);
    clearTimeout(deadline);
  }
}
