/**
 * The gateway's Prometheus metrics (docs/observability.md lists each with its meaning and unit), in a registry of
 * this gateway instance's own (several gateways in one process, as in the tests, do not share counters). The call
 * path only increments counters and observes histograms; everything that is a state (backlogs, lags, pauses,
 * sessions) is read when Prometheus scrapes, by the gauges' `collect` callbacks.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import { collectProcessMetrics } from './process-metrics.js';
import { talliedCounts, talliedHistogram } from './tallied.js';
import type { EndedCall } from '../calls/call-telemetry.js';

/** What the scrape-time gauges read: each part is absent when the gateway runs without it. */
export interface MetricSources {
  receipts?: {
    waitingCount(): number;
    store: { latestCheckpoint(): Promise<{ createdAt: string } | undefined> };
  };
  webhooks?: {
    readonly endpoints: ReadonlyMap<string, unknown>;
    readonly outbox: {
      readonly store: {
        endpoint(
          name: string,
        ):
          | Promise<{ pausedAt: string | null; disabledAt: string | null; counts: { pending: number } } | undefined>
          | { pausedAt: string | null; disabledAt: string | null; counts: { pending: number } }
          | undefined;
        events(
          endpoint: string,
          options: { status?: 'pending'; limit: number },
        ): Promise<ReadonlyArray<{ createdAt: string }>> | ReadonlyArray<{ createdAt: string }>;
      };
    };
  };
  registry?: {
    snapshot(): { readonly tools: ReadonlyMap<string, { sourceName: string }> };
    blockedReason(sourceName: string, toolName: string): string | undefined;
  };
  /** Sessions open now (the authorization area's store). */
  openSessions?: () => Promise<number>;
  /** `/mcp` requests refused before any call, by reason, counted by the authorizer since start. */
  mcpRefusals?: () => Record<string, number>;
}

/** Label of a tool or source the snapshot does not know: the name a client sent is not a label (unbounded). */
const UNKNOWN = '(unknown)';

/*
 * With `--workers`, a scrape gets every worker's metrics aggregated (cluster-metrics.ts): counters and histograms
 * are summed (prom-client's default), as is the journal backlog (each worker has its own journal); a gauge of state
 * every worker reads alike from the shared database says which single value stands (`aggregator`).
 */

/** Seconds: the gateway's own share of a call (decision, receipt, encoding), then the upstream's. */
const GATEWAY_SHARE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
const UPSTREAM_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface GatewayMetrics {
  readonly registry: Registry;
  setSources(sources: MetricSources): void;
  callEnded(call: EndedCall): void;
  deliveryAttempted(endpoint: string, isFailure: boolean): void;
  vaultFailed(provider: string): void;
  signInFailed(kind: 'password' | 'admin_token'): void;
  throttled(route: string): void;
  /** The exposition text, as `/metrics` serves it. */
  render(): Promise<{ contentType: string; text: string }>;
}

export function createGatewayMetrics(): GatewayMetrics {
  const registry = new Registry();
  let sources: MetricSources = {};
  const registers = [registry];
  // Node's process metrics but the GC histogram (process-metrics.ts says why); the event-loop delay is sampled every
  // 100 ms (prom-client's 10 ms default wakes an idle gateway a hundred times a second).
  collectProcessMetrics(registry, { eventLoopMonitoringPrecision: 100 });

  // Tallied on the call path, read into the counter when Prometheus scrapes (tallied.ts says why).
  const callCounts = talliedCounts();
  new Counter({
    name: 'gateway_tool_calls_total',
    help: 'Tool calls that reached a receipt, by source, tool and outcome (allowed, denied, action-required, error)',
    labelNames: ['source', 'tool', 'outcome'] as const,
    registers,
    collect() {
      this.reset();
      for (const [labels, count] of callCounts.entries()) this.inc(labels, count);
    },
  });
  const denials = new Counter({
    name: 'gateway_tool_call_denials_total',
    help: 'Tool calls refused by the decision, by reason code',
    labelNames: ['reason'] as const,
    registers,
  });
  const errors = new Counter({
    name: 'gateway_tool_call_errors_total',
    help: 'Allowed tool calls that ended in an error, by reason code',
    labelNames: ['reason'] as const,
    registers,
  });
  const gatewayShare = talliedHistogram({
    name: 'gateway_tool_call_gateway_duration_seconds',
    help: "The gateway's own share of a tool call: from receipt of the request to its receipt point, less the upstream's time",
    labelName: 'source',
    buckets: GATEWAY_SHARE_BUCKETS,
    registry,
  });
  const upstreamShare = talliedHistogram({
    name: 'gateway_tool_call_upstream_duration_seconds',
    help: "The upstream's share of an allowed tool call: credentials, the upstream exchange and reading its answer",
    labelName: 'source',
    buckets: UPSTREAM_BUCKETS,
    registry,
  });
  const deliveryAttempts = new Counter({
    name: 'gateway_webhook_delivery_attempts_total',
    help: 'Ordered webhook delivery attempts, by endpoint',
    labelNames: ['endpoint'] as const,
    registers,
  });
  const deliveryFailures = new Counter({
    name: 'gateway_webhook_delivery_failures_total',
    help: 'Webhook delivery attempts not acknowledged with a 2xx (an error status, a timeout, a network error), by endpoint',
    labelNames: ['endpoint'] as const,
    registers,
  });
  const vaultErrors = new Counter({
    name: 'gateway_vault_errors_total',
    help: 'Secret reads that failed (the vault could not be read, an exec command failed), by vault provider',
    labelNames: ['provider'] as const,
    registers,
  });
  const signInFailures = new Counter({
    name: 'gateway_signin_failures_total',
    help: 'Failed sign-ins: a wrong local password (password) or a wrong admin token (admin_token)',
    labelNames: ['kind'] as const,
    registers,
  });
  const throttles = new Counter({
    name: 'gateway_throttled_requests_total',
    help: 'Requests answered 429 by a throttle (sign-in, /authorize, registration, the admin token), by route',
    labelNames: ['route'] as const,
    registers,
  });

  registerStateGauges(registers, () => sources);

  // The hot path's series, found once per label set (bounded like the labels themselves).
  // Nested by label, not keyed by one joined string: a call then builds and hashes no new string.
  const callSeries = new Map<string, Map<string, Map<string, { inc(): void }>>>();
  const callCounter = (source: string, tool: string, outcome: string) => {
    let bySource = callSeries.get(source);
    if (!bySource) {
      bySource = new Map();
      callSeries.set(source, bySource);
    }
    let byTool = bySource.get(tool);
    if (!byTool) {
      byTool = new Map();
      bySource.set(tool, byTool);
    }
    let series = byTool.get(outcome);
    if (!series) {
      series = callCounts.series({ source, tool, outcome });
      byTool.set(outcome, series);
    }
    return series;
  };

  return {
    registry,
    setSources(next) {
      sources = next;
    },
    callEnded(call) {
      const source = call.source ?? UNKNOWN;
      callCounter(source, call.source === null ? UNKNOWN : call.tool, call.outcome).inc();
      if (call.outcome === 'denied') denials.inc({ reason: call.reason ?? UNKNOWN });
      else if (call.outcome === 'error') errors.inc({ reason: call.reason ?? UNKNOWN });
      const totalMs = call.endedMark - call.startedMark;
      gatewayShare.series(source).observe(Math.max(0, totalMs - (call.upstreamMs ?? 0)) / 1000);
      if (call.upstreamMs !== undefined) upstreamShare.series(source).observe(call.upstreamMs / 1000);
    },
    deliveryAttempted(endpoint, isFailure) {
      deliveryAttempts.inc({ endpoint });
      if (isFailure) deliveryFailures.inc({ endpoint });
    },
    vaultFailed(provider) {
      vaultErrors.inc({ provider });
    },
    signInFailed(kind) {
      signInFailures.inc({ kind });
    },
    throttled(route) {
      throttles.inc({ route });
    },
    async render() {
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
  };
}

/**
 * The gauges read at scrape time from the gateway's state (collect callbacks): receipts waiting to move, the newest
 * checkpoint's age, outbox depth, delivery lag, paused endpoints, drift blocks, open sessions, /mcp refusals.
 */
function registerStateGauges(registers: Registry[], getSources: () => MetricSources): void {
  new Gauge({
    name: 'gateway_receipts_waiting',
    help: 'Receipts durable in the journal and not yet moved into the database',
    registers,
    collect() {
      const receipts = getSources().receipts;
      if (receipts) this.set(receipts.waitingCount());
    },
  });
  new Gauge({
    name: 'gateway_receipts_checkpoint_age_seconds',
    aggregator: 'min',
    help: 'Age of the newest signed checkpoint of the receipt log (absent before the first)',
    registers,
    async collect() {
      const latest = await getSources().receipts?.store.latestCheckpoint();
      this.reset();
      if (latest) this.set(Math.max(0, (Date.now() - Date.parse(latest.createdAt)) / 1000));
    },
  });
  // The three outbox gauges are read together, one query set per endpoint per scrape: prom-client collects every
  // metric at once, so the first of their collects starts the read and the others wait for the same one.
  let outboxReading: Promise<void> | undefined;
  const readOutbox = (): Promise<void> =>
    (outboxReading ??= readOutboxState().finally(() => {
      outboxReading = undefined;
    }));
  const outboxDepth = new Gauge({
    name: 'gateway_webhook_outbox_depth',
    aggregator: 'max',
    help: 'Events waiting for delivery, by endpoint',
    labelNames: ['endpoint'] as const,
    registers,
    collect: readOutbox,
  });
  const deliveryLag = new Gauge({
    name: 'gateway_webhook_delivery_lag_seconds',
    aggregator: 'max',
    help: 'Age of the oldest event waiting for delivery, by endpoint (0 when none waits)',
    labelNames: ['endpoint'] as const,
    registers,
    collect: readOutbox,
  });
  const paused = new Gauge({
    name: 'gateway_webhook_endpoint_paused',
    aggregator: 'max',
    help: '1 while an endpoint is paused (its attempts ran out) or disabled (it answered 410 Gone), else 0',
    labelNames: ['endpoint', 'state'] as const,
    registers,
    collect: readOutbox,
  });
  async function readOutboxState(): Promise<void> {
    const webhooks = getSources().webhooks;
    const now = Date.now();
    const states = webhooks
      ? await Promise.all(
          [...webhooks.endpoints.keys()].map(async (name) => {
            const state = await webhooks.outbox.store.endpoint(name);
            const pending = state?.counts.pending ?? 0;
            const [oldest] = pending > 0 ? await webhooks.outbox.store.events(name, { status: 'pending', limit: 1 }) : [];
            return { name, state, pending, oldest };
          }),
        )
      : [];
    outboxDepth.reset();
    deliveryLag.reset();
    paused.reset();
    for (const { name, state, pending, oldest } of states) {
      outboxDepth.set({ endpoint: name }, pending);
      deliveryLag.set({ endpoint: name }, oldest ? Math.max(0, (now - Date.parse(oldest.createdAt)) / 1000) : 0);
      paused.set({ endpoint: name, state: 'paused' }, state?.pausedAt ? 1 : 0);
      paused.set({ endpoint: name, state: 'disabled' }, state?.disabledAt ? 1 : 0);
    }
  }
  new Gauge({
    name: 'gateway_drift_blocked_tools',
    aggregator: 'max',
    help: 'Tools of the in-use publications not callable because their live description drifted, by source',
    labelNames: ['source'] as const,
    registers,
    collect() {
      this.reset();
      const tools = getSources().registry;
      if (!tools) return;
      const blocked = new Map<string, number>();
      for (const [name, tool] of tools.snapshot().tools) {
        const count = blocked.get(tool.sourceName) ?? 0;
        blocked.set(tool.sourceName, count + (tools.blockedReason(tool.sourceName, name) === undefined ? 0 : 1));
      }
      for (const [source, count] of blocked) this.set({ source }, count);
    },
  });
  new Gauge({
    name: 'gateway_sessions_open',
    aggregator: 'max',
    help: 'Sessions open now (approved, neither revoked nor expired)',
    registers,
    async collect() {
      const openSessions = getSources().openSessions;
      if (openSessions) this.set(await openSessions());
    },
  });
  new Counter({
    name: 'gateway_mcp_refusals_total',
    help: 'Requests to /mcp refused before any tool call (no or a bad token, an ended session…) since start, by reason',
    labelNames: ['reason'] as const,
    registers,
    collect() {
      this.reset();
      // The authorizer keeps the count: read as it stands at each scrape.
      for (const [reason, count] of Object.entries(getSources().mcpRefusals?.() ?? {})) this.inc({ reason }, count);
    },
  });
}
