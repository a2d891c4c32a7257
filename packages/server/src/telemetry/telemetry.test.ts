import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { parseConfig, type LoadedConfig } from '@gateway/core';
import type { Vault } from '@gateway/runtime';
import { createTelemetry } from './index.js';

function loadedWith(telemetry: string): LoadedConfig {
  const text = [
    'gateway:',
    '  url: http://127.0.0.1:8080',
    'sources:',
    '  orders: { kind: openapi, document: openapi.yaml }',
    telemetry,
    '',
  ].join('\n');
  return parseConfig(text, '/tmp/gateway.yaml');
}

const call = {
  tool: 'get_order',
  source: 'orders',
  outcome: 'allowed' as const,
  reason: null,
  startedMark: 0,
  decidedMark: 1,
  endedMark: 5,
  upstreamMs: 3,
};

describe('createTelemetry', () => {
  it('builds no tracer while traces are off: the call path sees no `tracing` to ask', async () => {
    const telemetry = await createTelemetry(loadedWith(''));
    expect(telemetry.tracing).toBeUndefined();
    expect(telemetry.calls.tracing).toBeUndefined();
    expect(telemetry.deliveries.attemptStarted('audit', { eventId: 'e', receiptId: 'receipt-1' }).headers).toBeUndefined();
    await telemetry.close();
  });

  it('builds the tracer when telemetry.traces.endpoint is set', async () => {
    const telemetry = await createTelemetry(loadedWith('telemetry: { traces: { endpoint: "http://127.0.0.1:9/v1/traces" } }'));
    expect(telemetry.tracing).toBeDefined();
    expect(telemetry.calls.tracing).toBeDefined();
    // Outside a traced /mcp request there is nothing to continue.
    expect(telemetry.calls.tracing!.upstreamStarted({ name: 'get_order', sourceName: 'orders', kind: 'openapi' })).toBeUndefined();
    await telemetry.close();
  });

  it('keeps a registry per gateway: two in one process count apart', async () => {
    const first = await createTelemetry(loadedWith(''));
    const second = await createTelemetry(loadedWith(''));
    first.calls.callEnded(call, Promise.resolve(undefined));
    first.calls.callEnded(call, Promise.resolve(undefined));
    second.calls.callEnded({ ...call, outcome: 'denied', reason: 'TOOL_NOT_IN_SESSION' }, Promise.resolve(undefined));
    const line = 'gateway_tool_calls_total{source="orders",tool="get_order",outcome="allowed"}';
    expect((await first.metrics!.render()).text).toContain(`${line} 2`);
    const secondText = (await second.metrics!.render()).text;
    expect(secondText).not.toContain(line);
    expect(secondText).toContain('gateway_tool_call_denials_total{reason="TOOL_NOT_IN_SESSION"} 1');
    await Promise.all([first.close(), second.close()]);
  });

  it("serves Node's process metrics as prom-client's defaults do, but the per-collection GC histogram", async () => {
    const telemetry = await createTelemetry(loadedWith(''));
    const names = new Set([...(await telemetry.metrics!.render()).text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]));
    for (const name of [
      'process_cpu_seconds_total',
      'process_start_time_seconds',
      'process_resident_memory_bytes',
      'process_open_fds',
      'nodejs_eventloop_lag_seconds',
      'nodejs_active_handles_total',
      'nodejs_heap_size_used_bytes',
      'nodejs_heap_space_size_used_bytes',
      'nodejs_version_info',
    ]) {
      expect(names, name).toContain(name);
    }
    expect(names).not.toContain('nodejs_gc_duration_seconds');
    await telemetry.close();
  });

  it('observes the gateway and upstream shares of a call in seconds, by source', async () => {
    const telemetry = await createTelemetry(loadedWith(''));
    telemetry.calls.callEnded(call, Promise.resolve(undefined));
    telemetry.calls.callEnded(
      { ...call, outcome: 'denied', reason: 'TOOL_NOT_IN_SESSION', upstreamMs: undefined },
      Promise.resolve(undefined),
    );
    const text = (await telemetry.metrics!.render()).text;
    // 5 ms in all, 3 of them upstream: the gateway's share is 2 ms; the refused call's is its whole 5 ms.
    expect(text).toContain('gateway_tool_call_gateway_duration_seconds_bucket{le="0.0025",source="orders"} 1');
    expect(text).toContain('gateway_tool_call_gateway_duration_seconds_sum{source="orders"} 0.007');
    expect(text).toContain('gateway_tool_call_gateway_duration_seconds_count{source="orders"} 2');
    expect(text).toContain('gateway_tool_call_upstream_duration_seconds_bucket{le="0.005",source="orders"} 1');
    expect(text).toContain('gateway_tool_call_upstream_duration_seconds_count{source="orders"} 1');
    await telemetry.close();
  });

  it('labels a tool the snapshot does not know as (unknown), never with the name the client sent', async () => {
    const telemetry = await createTelemetry(loadedWith(''));
    telemetry.calls.callEnded(
      { ...call, tool: 'made-up-name-1234', source: null, outcome: 'denied', reason: 'TOOL_UNKNOWN' },
      Promise.resolve(undefined),
    );
    const text = (await telemetry.metrics!.render()).text;
    expect(text).not.toContain('made-up-name-1234');
    expect(text).toContain('gateway_tool_calls_total{source="(unknown)",tool="(unknown)",outcome="denied"} 1');
    await telemetry.close();
  });

  it('counts failed vault reads, and passes values, misses and create-if-absent through', async () => {
    const telemetry = await createTelemetry(loadedWith(''));
    const vault: Vault = {
      provider: 'exec',
      get: async (name) => {
        if (name === 'broken') throw new Error('the command failed');
        return name === 'present' ? 'value' : undefined;
      },
      set: async () => {
        throw new Error('read-only');
      },
      // What another process stored first: the observed vault must hand back the vault's answer, not the value given.
      create: async (name) => `stored-first-${name}`,
      delete: async () => false,
      list: async () => [],
    };
    const observed = telemetry.observeVault(vault);
    expect(await observed.create('key', 'mine')).toBe('stored-first-key');
    expect(await observed.get('present')).toBe('value');
    expect(await observed.get('absent')).toBeUndefined();
    await expect(observed.get('broken')).rejects.toThrow('the command failed');
    expect((await telemetry.metrics!.render()).text).toContain('gateway_vault_errors_total{provider="exec"} 1');
    await telemetry.close();
  });

  it('serves nothing through the admin API when metrics have a listener of their own, or are off', async () => {
    expect((await createTelemetry(loadedWith('telemetry: { metrics: { listen: "127.0.0.1:0" } }'))).adminMetrics).toBeUndefined();
    expect((await createTelemetry(loadedWith('telemetry: { metrics: { enabled: false } }'))).adminMetrics).toBeUndefined();
    expect((await createTelemetry(loadedWith(''))).adminMetrics).toBeDefined();
  });

  it('reads the gauges from their sources at scrape time', async () => {
    const telemetry = await createTelemetry(loadedWith(''));
    const now = Date.now();
    const endpoints = new Map([
      ['audit', { pausedAt: new Date(now).toISOString(), disabledAt: null, counts: { pending: 3 } }],
      ['siem', { pausedAt: null, disabledAt: null, counts: { pending: 0 } }],
    ]);
    telemetry.watch({
      receipts: { waitingCount: () => 12, store: { latestCheckpoint: async () => ({ createdAt: new Date(now - 30_000).toISOString() }) } },
      webhooks: {
        endpoints,
        outbox: {
          store: {
            endpoint: async (name) => endpoints.get(name),
            events: async () => [{ createdAt: new Date(now - 90_000).toISOString() }],
          },
        },
      },
      registry: {
        snapshot: () => ({
          tools: new Map([
            ['get_order', { sourceName: 'orders' }],
            ['cancel_order', { sourceName: 'orders' }],
          ]),
        }),
        blockedReason: (_source, tool) => (tool === 'cancel_order' ? 'changed' : undefined),
      },
      openSessions: async () => 4,
      mcpRefusals: () => ({ token_invalid: 2 }),
    });
    const text = (await telemetry.metrics!.render()).text;
    expect(text).toMatch(/^gateway_receipts_waiting 12$/m);
    expect(Number(/^gateway_receipts_checkpoint_age_seconds (\S+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(30);
    expect(text).toMatch(/^gateway_webhook_outbox_depth\{endpoint="audit"\} 3$/m);
    expect(text).toMatch(/^gateway_webhook_outbox_depth\{endpoint="siem"\} 0$/m);
    expect(Number(/^gateway_webhook_delivery_lag_seconds\{endpoint="audit"\} (\S+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(90);
    expect(text).toMatch(/^gateway_webhook_delivery_lag_seconds\{endpoint="siem"\} 0$/m);
    expect(text).toMatch(/^gateway_webhook_endpoint_paused\{endpoint="audit",state="paused"\} 1$/m);
    expect(text).toMatch(/^gateway_webhook_endpoint_paused\{endpoint="siem",state="paused"\} 0$/m);
    expect(text).toMatch(/^gateway_drift_blocked_tools\{source="orders"\} 1$/m);
    expect(text).toMatch(/^gateway_sessions_open 4$/m);
    expect(text).toMatch(/^gateway_mcp_refusals_total\{reason="token_invalid"\} 2$/m);
    await telemetry.close();
  });

  it('counts delivery attempts and the ones not acknowledged with a 2xx', async () => {
    const telemetry = await createTelemetry(loadedWith(''));
    telemetry.deliveries.attemptStarted('audit', { eventId: 'e1', receiptId: 'receipt-1' }).end({ status: 204, error: null });
    telemetry.deliveries.attemptStarted('audit', { eventId: 'e2', receiptId: 'receipt-2' }).end({ status: 503, error: 'HTTP 503' });
    telemetry.deliveries.attemptStarted('audit', { eventId: 'e2', receiptId: 'receipt-2' }).end({ status: null, error: 'ECONNREFUSED' });
    const text = (await telemetry.metrics!.render()).text;
    expect(text).toMatch(/^gateway_webhook_delivery_attempts_total\{endpoint="audit"\} 3$/m);
    expect(text).toMatch(/^gateway_webhook_delivery_failures_total\{endpoint="audit"\} 2$/m);
    await telemetry.close();
  });

  it('counts wrong passwords at sign-in, wrong admin tokens and every 429, by route', async () => {
    const telemetry = await createTelemetry(loadedWith(''));
    const app = Fastify();
    telemetry.install(app);
    app.post('/signin', async (_request, reply) => reply.code(401).send('no'));
    app.get('/admin/status', async (_request, reply) => reply.code(401).send('no'));
    app.post('/authorize', async (_request, reply) => reply.code(429).send('wait'));
    app.get('/healthz', async () => 'ok');
    await app.inject({ method: 'POST', url: '/signin' });
    await app.inject({ method: 'POST', url: '/signin' });
    await app.inject({ method: 'GET', url: '/admin/status' });
    await app.inject({ method: 'POST', url: '/authorize' });
    await app.inject({ method: 'GET', url: '/healthz' });
    const text = (await telemetry.metrics!.render()).text;
    expect(text).toMatch(/^gateway_signin_failures_total\{kind="password"\} 2$/m);
    expect(text).toMatch(/^gateway_signin_failures_total\{kind="admin_token"\} 1$/m);
    expect(text).toMatch(/^gateway_throttled_requests_total\{route="\/authorize"\} 1$/m);
    await app.close();
    await telemetry.close();
  });

  it('warns (once a minute at most) when spans cannot be exported, and goes on', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const warnings: string[] = [];
    const telemetry = await createTelemetry(loadedWith(`telemetry: { traces: { endpoint: "http://127.0.0.1:${port}/v1/traces" } }`), {
      tracesExportDelayMs: 20,
      warn: (message) => warnings.push(message),
    });
    for (let index = 0; index < 3; index += 1) {
      const request = telemetry.tracing!.startRequest({ headers: {}, body: undefined, method: 'POST', startTime: performance.now() });
      request.end(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const deadline = Date.now() + 10_000;
    while (warnings.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`traces could not be exported to http://127.0.0.1:${port}/v1/traces`);
    await telemetry.close();
  });
});
