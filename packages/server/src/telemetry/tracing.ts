/**
 * OpenTelemetry traces (docs/observability.md): a span per `/mcp` request, continuing the client's W3C trace
 * context (`params._meta.traceparent` of the request, SEP-414, else the `traceparent` header), with children for the
 * decision, the upstream call and the receipt; the context goes on to HTTP upstreams (headers), MCP upstreams
 * (`_meta`) and the webhook deliveries of the call's receipt (headers). Exported over OTLP/HTTP (JSON).
 *
 * The provider is this gateway instance's own, never registered globally, and the request's span travels in an
 * AsyncLocalStorage of its own: two gateways in one process trace apart. Built only when traces are on: when
 * they are off nothing here exists, and the call path's only cost is checking that it does not.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { Receipt } from '@gateway/core';
import type { EndedCall, UpstreamSpan } from '../calls/call-telemetry.js';
import type { TraceCarrier } from '../execute/tool-call.js';
import type { ToolCallOutcome } from '../execute/tool-call.js';

/** At most one warning about failed exports per this long (a collector that is down must not flood the log). */
const EXPORT_WARNING_INTERVAL_MS = 60_000;

/** Receipts whose span context is kept for their webhook deliveries (the oldest forgotten first). */
const REMEMBERED_RECEIPTS = 10_000;

interface RequestTrace {
  span: Span;
  context: Context;
}

export interface TracingOptions {
  endpoint: string;
  serviceName: string;
  sampleRatio: number;
  /** Batch export delay (default 2 s). */
  exportDelayMs?: number;
  /** Told (at most once a minute) that spans could not be exported. */
  warn?: (message: string) => void;
}

export interface Tracing {
  /** Starts the span of one `/mcp` request under the client's context; `run` continues inside it. */
  startRequest(options: { headers: Record<string, string | string[] | undefined>; body: unknown; method: string; startTime: number }): {
    run<T>(work: () => T): T;
    end(statusCode: number): void;
  };
  upstreamStarted(tool: { name: string; sourceName: string; kind: string }): UpstreamSpan | undefined;
  traceId(): string | undefined;
  callEnded(call: EndedCall, written: Promise<Receipt | undefined>): void;
  /** A webhook delivery of `receiptId`'s event: a child of that receipt's span, when this process traced it. */
  deliveryStarted(
    endpoint: string,
    receiptId: string | null,
  ): { headers: Record<string, string>; end(failure: string | null): void } | undefined;
  close(): Promise<void>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** SEP-414: `traceparent` and `tracestate` in the request's `params._meta`, W3C formats. */
function metaCarrier(body: unknown): Record<string, unknown> | undefined {
  if (!isObject(body) || !isObject(body.params) || !isObject(body.params._meta)) return undefined;
  return typeof body.params._meta.traceparent === 'string' ? body.params._meta : undefined;
}

export function createTracing(options: TracingOptions): Tracing {
  const otlp = new OTLPTraceExporter({ url: options.endpoint });
  let lastWarningAt = 0;
  const exporter: SpanExporter = {
    export(spans, done) {
      otlp.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS && Date.now() - lastWarningAt >= EXPORT_WARNING_INTERVAL_MS) {
          lastWarningAt = Date.now();
          options.warn?.(`traces could not be exported to ${options.endpoint}: ${result.error?.message ?? 'failed'} (spans dropped)`);
        }
        done(result);
      });
    },
    shutdown: () => otlp.shutdown(),
    forceFlush: () => otlp.forceFlush(),
  };
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampleRatio) }),
    // Four spans a call: the SDK's default queue (2,048 spans) fills within a second at a few hundred calls a
    // second while one export is in flight, and spans past it are dropped.
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        scheduledDelayMillis: options.exportDelayMs ?? 2000,
        maxQueueSize: 16_384,
        maxExportBatchSize: 2048,
      }),
    ],
  });
  const tracer: Tracer = provider.getTracer('gateway');
  const propagator = new W3CTraceContextPropagator();
  const storage = new AsyncLocalStorage<RequestTrace>();
  const receiptContexts = new Map<string, SpanContext>();

  const carrierOf = (context: Context): TraceCarrier => {
    const carrier: Record<string, string> = {};
    propagator.inject(context, carrier, defaultTextMapSetter);
    return carrier as unknown as TraceCarrier;
  };
  const remember = (receiptId: string, spanContext: SpanContext) => {
    receiptContexts.set(receiptId, spanContext);
    if (receiptContexts.size > REMEMBERED_RECEIPTS) receiptContexts.delete(receiptContexts.keys().next().value!);
  };

  return {
    startRequest({ headers, body, method, startTime }) {
      const meta = metaCarrier(body);
      const parent = propagator.extract(ROOT_CONTEXT, meta ?? headers, defaultTextMapGetter);
      const rpcMethod = isObject(body) && typeof body.method === 'string' ? body.method : undefined;
      const toolName = rpcMethod === 'tools/call' && isObject(body) && isObject(body.params) ? body.params.name : undefined;
      // MCP semantic conventions: "{mcp.method.name} {target}", kind SERVER.
      const name = rpcMethod ? (typeof toolName === 'string' ? `${rpcMethod} ${toolName}` : rpcMethod) : `${method} /mcp`;
      const span = tracer.startSpan(
        name,
        {
          kind: SpanKind.SERVER,
          startTime,
          attributes: {
            'http.request.method': method,
            'url.path': '/mcp',
            ...(rpcMethod ? { 'mcp.method.name': rpcMethod } : {}),
            ...(typeof toolName === 'string' ? { 'gen_ai.tool.name': toolName } : {}),
          },
        },
        parent,
      );
      const request: RequestTrace = { span, context: trace.setSpan(parent, span) };
      return {
        run: (work) => storage.run(request, work),
        end(statusCode) {
          span.setAttribute('http.response.status_code', statusCode);
          if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        },
      };
    },

    upstreamStarted(tool) {
      const request = storage.getStore();
      if (!request) return undefined;
      const span = tracer.startSpan(
        `upstream ${tool.sourceName}`,
        {
          kind: SpanKind.CLIENT,
          attributes: { 'gen_ai.tool.name': tool.name, 'gateway.source': tool.sourceName, 'gateway.source.kind': tool.kind },
        },
        request.context,
      );
      return {
        carrier: carrierOf(trace.setSpan(request.context, span)),
        end(outcome: ToolCallOutcome | undefined) {
          span.setAttribute('gateway.upstream.outcome', outcome?.outcome ?? 'internal-error');
          if (outcome?.upstreamStatus !== undefined) span.setAttribute('http.response.status_code', outcome.upstreamStatus);
          if (outcome?.outcome !== 'ok') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome?.outcome ?? 'internal error' });
          span.end();
        },
      };
    },

    traceId() {
      return storage.getStore()?.span.spanContext().traceId;
    },

    callEnded(call, written) {
      const request = storage.getStore();
      if (!request) return;
      const attributes = {
        'gen_ai.tool.name': call.tool,
        'gateway.call.outcome': call.outcome,
        ...(call.reason ? { 'gateway.call.reason': call.reason } : {}),
      };
      if (call.decidedMark !== undefined) {
        tracer.startSpan('gateway.decision', { startTime: call.startedMark, attributes }, request.context).end(call.decidedMark);
      }
      // From the receipt point until the receipt is in the database (with its outbox rows).
      const receiptSpan = tracer.startSpan('gateway.receipt', { startTime: call.endedMark, attributes }, request.context);
      void written.then((receipt) => {
        if (receipt) {
          receiptSpan.setAttribute('gateway.receipt.id', receipt.id);
          remember(receipt.id, receiptSpan.spanContext());
        }
        receiptSpan.end();
      });
    },

    deliveryStarted(endpoint, receiptId) {
      const parent = receiptId === null ? undefined : receiptContexts.get(receiptId);
      if (!parent) return undefined;
      const span = tracer.startSpan(
        `webhook ${endpoint}`,
        { kind: SpanKind.PRODUCER, attributes: { 'gateway.webhook.endpoint': endpoint, 'gateway.receipt.id': receiptId! } },
        trace.setSpanContext(ROOT_CONTEXT, parent),
      );
      return {
        headers: carrierOf(trace.setSpan(ROOT_CONTEXT, span)) as unknown as Record<string, string>,
        end(failure) {
          if (failure) span.setStatus({ code: SpanStatusCode.ERROR, message: failure });
          span.end();
        },
      };
    },

    async close() {
      await provider.shutdown();
    },
  };
}
