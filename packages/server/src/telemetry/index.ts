/**
 * The telemetry area (docs/observability.md): Prometheus metrics (metrics.ts) and, when
 * `telemetry.traces.endpoint` is set, OpenTelemetry traces (tracing.ts). It implements the small interfaces the
 * call pipeline (`CallTelemetry`) and the webhook dispatcher (`DeliveryTelemetry`) declare, adds Fastify hooks
 * (the `/mcp` request span; 401 and 429 answers counted), wraps the vault (failed reads counted), and serves
 * `/metrics` either through the admin API (behind its token) or on a listener of its own.
 */
import { createServer, type Server } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULT_TRACES_SERVICE_NAME, GatewayError, type LoadedConfig } from '@gateway/core';
import { LISTEN_ADDRESS_FIX, listenAddressProblem, listenAddressText, parseListen, type Vault } from '@gateway/runtime';
import type { CallTelemetry } from '../calls/call-telemetry.js';
import type { DeliveryTelemetry } from '../outbox/delivery-telemetry.js';
import { clusterMetricsRenderer } from './cluster-metrics.js';
import { createGatewayMetrics, type GatewayMetrics, type MetricSources } from './metrics.js';
import type { Tracing } from './tracing.js';

export type { MetricSources } from './metrics.js';
export { answerClusterMetrics } from './cluster-metrics.js';

export interface Telemetry {
  /** Absent when `telemetry.metrics.enabled: false`. */
  readonly metrics: GatewayMetrics | undefined;
  /** Absent when traces are off (the default). */
  readonly tracing: Tracing | undefined;
  /** Given to the call pipeline. */
  readonly calls: CallTelemetry;
  /** Given to the webhook dispatcher. */
  readonly deliveries: DeliveryTelemetry;
  /** `/metrics` through the admin API, behind its token; undefined when metrics are off or have a listener of their own. */
  readonly adminMetrics: (() => Promise<{ contentType: string; text: string }>) | undefined;
  /** The same vault, its failed reads counted. */
  observeVault(vault: Vault): Vault;
  /** What the scrape-time gauges read, once the gateway has built it. */
  watch(sources: MetricSources): void;
  /** Adds the hooks to the application; before the areas are registered, so they apply to every route. */
  install(app: FastifyInstance): void;
  /** Starts the metrics listener of `telemetry.metrics.listen`, if any. */
  listen(): Promise<void>;
  close(): Promise<void>;
}

/** How long closing waits for the last spans to be exported (a collector that does not answer must not hold it). */
const TRACES_CLOSE_TIMEOUT_MS = 3000;

function isMcpPath(url: string): boolean {
  return url === '/mcp' || url.startsWith('/mcp?');
}

/**
 * The OpenTelemetry SDK and exporter are imported only when traces are on: a gateway without them does not load
 * them (packages/server/test/lazy-modules.test.ts).
 */
export async function createTelemetry(
  loaded: LoadedConfig,
  options: { tracesExportDelayMs?: number; isClusterWorker?: boolean; warn?: (message: string) => void } = {},
): Promise<Telemetry> {
  const settings = loaded.config.telemetry ?? {};
  const metrics = settings.metrics?.enabled === false ? undefined : createGatewayMetrics();
  // A worker of `--workers` answers a scrape with the whole cluster's metrics, which the primary aggregates.
  const render = metrics && options.isClusterWorker ? clusterMetricsRenderer(metrics.registry) : metrics?.render;
  const traces = settings.traces;
  const tracing = traces?.endpoint
    ? (await import('./tracing.js')).createTracing({
        endpoint: traces.endpoint,
        serviceName: traces.serviceName ?? DEFAULT_TRACES_SERVICE_NAME,
        sampleRatio: traces.sampleRatio ?? 1,
        ...(options.tracesExportDelayMs === undefined ? {} : { exportDelayMs: options.tracesExportDelayMs }),
        ...(options.warn ? { warn: options.warn } : {}),
      })
    : undefined;
  const metricsListen = metrics && settings.metrics?.listen ? parseListen(settings.metrics.listen) : undefined;
  let listener: Server | undefined;

  const calls: CallTelemetry = {
    callEnded(call, written) {
      metrics?.callEnded(call);
      tracing?.callEnded(call, written);
    },
    ...(tracing ? { tracing: { upstreamStarted: tracing.upstreamStarted, traceId: tracing.traceId } } : {}),
  };

  const deliveries: DeliveryTelemetry = {
    attemptStarted(endpoint, event) {
      const span = tracing?.deliveryStarted(endpoint, event.receiptId);
      return {
        ...(span ? { headers: span.headers } : {}),
        end(result) {
          const isFailure = result.status === null || result.status < 200 || result.status >= 300;
          metrics?.deliveryAttempted(endpoint, isFailure);
          span?.end(isFailure ? (result.error ?? 'failed') : null);
        },
      };
    },
  };

  function install(app: FastifyInstance): void {
    if (metrics) {
      // Refused sign-ins and throttled requests, counted on the routes that answer them: every route but /mcp
      // (whose refusals the authorizer counts), so a tool call pays nothing for it.
      const countRefusal = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
        const status = reply.statusCode;
        const route = request.routeOptions.url;
        if (status === 429) metrics.throttled(route ?? 'unmatched');
        else if (status === 401 && request.method === 'POST' && route?.endsWith('/signin')) metrics.signInFailed('password');
        else if (status === 401 && (request.url.startsWith('/admin/') || request.url === '/metrics')) metrics.signInFailed('admin_token');
        done();
      };
      app.addHook('onRoute', (route) => {
        if (route.url === '/mcp') return;
        const existing = route.onResponse;
        route.onResponse = existing === undefined ? [countRefusal] : [...(Array.isArray(existing) ? existing : [existing]), countRefusal];
      });
    }
    if (tracing) {
      const started = new WeakMap<FastifyRequest, number>();
      app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: () => void) => {
        if (isMcpPath(request.url)) started.set(request, performance.now());
        done();
      });
      // After the body is parsed (its `_meta` may carry the client's context), right before the handler, which
      // then runs inside the request's span.
      app.addHook('preHandler', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
        const startTime = started.get(request);
        if (startTime === undefined) return done();
        const span = tracing.startRequest({ headers: request.headers, body: request.body, method: request.method, startTime });
        reply.raw.once('close', () => span.end(reply.raw.statusCode));
        span.run(done);
      });
    }
  }

  async function listen(): Promise<void> {
    if (!metrics || !metricsListen) return;
    listener = await startMetricsListener(metricsListen, render!);
  }

  return {
    metrics,
    tracing,
    calls,
    deliveries,
    adminMetrics: render && !metricsListen ? render : undefined,
    observeVault(vault) {
      if (!metrics) return vault;
      return {
        provider: vault.provider,
        ...(vault.location ? { location: vault.location } : {}),
        get: (name) =>
          vault.get(name).catch((error: unknown) => {
            metrics.vaultFailed(vault.provider);
            throw error;
          }),
        set: (name, value) => vault.set(name, value),
        create: (name, value) => vault.create(name, value),
        delete: (name) => vault.delete(name),
        list: () => vault.list(),
        ...(vault.check ? { check: () => vault.check!() } : {}),
        ...(vault.close ? { close: () => vault.close!() } : {}),
      };
    },
    watch(sources) {
      metrics?.setSources(sources);
    },
    install,
    listen,
    async close() {
      if (listener) {
        const server = listener;
        listener = undefined;
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      if (tracing) {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, TRACES_CLOSE_TIMEOUT_MS);
        });
        await Promise.race([tracing.close().catch(() => undefined), timeout]);
        clearTimeout(timer);
      }
    },
  };
}

/** `telemetry.metrics.listen`: a listener of its own that serves `GET /metrics` only (no admin token there). */
async function startMetricsListener(
  metricsListen: { host: string; port: number },
  render: () => Promise<{ contentType: string; text: string }>,
): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: this listener serves GET /metrics only\n');
      return;
    }
    render().then(
      ({ contentType, text }) => response.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(text),
      (error: Error) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${error.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      const problem = listenAddressProblem(error.code);
      const address = listenAddressText(metricsListen);
      reject(
        problem
          ? new GatewayError(
              'LISTEN_ADDRESS_UNAVAILABLE',
              `cannot listen on ${address} (telemetry.metrics.listen): ${problem}; ${LISTEN_ADDRESS_FIX}`,
              {
                details: { address, reason: error.code },
              },
            )
          : error,
      );
    });
    server.listen(metricsListen.port, metricsListen.host, () => resolve());
  });
  return server;
}
