// bench/ab: two builds of the gateway side by side in one run, to see what a change does to the call path.
// Single runs on a shared machine move by ±20 %; two gateways measured in interleaved rounds of one run see the
// same noise, so their ratio is what to read (an A/A run shows the floor, about ±5 % here).
//
//   git worktree add ../base main && (cd ../base && pnpm install && pnpm build)     # the build to compare with
//   pnpm build && node bench/ab.mjs --a ../base [--b .] [--hooks] [--traces] [--concurrency 8] [--rounds 6] [--calls 2000]
//
// --traces adds two sides: B with metrics off too (`telemetry.metrics.enabled: false`: the call path as it was
// before telemetry, as near as one build gets), and B with OpenTelemetry traces on (`telemetry.traces.endpoint`,
// every call sampled, exported to an OTLP/HTTP sink in this process). Without --a, ratios are to the first of them.
//
// Each side: its own workspace (the real CLI: import → review → publish), the same example upstream, the
// allow-all authorizer of bench/support.mjs (this measures the call path, not OAuth), receipts on, and with
// --hooks a webhook endpoint with its own receiver (each round then waits for its events). Per side: gateway
// CPU per call (/proc, all threads), calls (and events) per second, and the median of the rounds' p50.
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  ENV,
  allowAllOrderCall,
  benchChild,
  gatewayExecArgv,
  ordersWorkspace,
  percentile,
  processStats,
  root,
  serveWithAllowAllAuthorizer,
  startUpstream,
  startWebhookReceiver,
} from './support.mjs';

if (process.argv[2] === 'child') {
  await serveWithAllowAllAuthorizer({ logins: ['orders/api_key'], build: process.env.BENCH_BUILD });
} else {
  const { values: options } = parseArgs({
    options: {
      a: { type: 'string' },
      b: { type: 'string', default: root },
      hooks: { type: 'boolean', default: false },
      traces: { type: 'boolean', default: false },
      concurrency: { type: 'string', default: '8' },
      rounds: { type: 'string', default: '6' },
      calls: { type: 'string', default: '2000' },
    },
  });
  const ROUNDS = Number(options.rounds);
  const CALLS = Number(options.calls);
  const CONCURRENCY = Number(options.concurrency);
  if (!options.a && !options.traces) throw new Error('--a <checkout> is required: the build to compare with (its packages/*/dist built)');
  if (!(ROUNDS >= 1 && ROUNDS <= 50 && CALLS >= 100 && CALLS <= 20_000 && CONCURRENCY >= 1 && CONCURRENCY <= 64))
    throw new Error('--rounds 1..50, --calls 100..20000, --concurrency 1..64');
  const { Agent, request } = await import(
    pathToFileURL(createRequire(resolve(root, 'packages/server/package.json')).resolve('undici')).href
  );

  const upstream = await startUpstream();
  const sides = [];
  const cleanups = [() => upstream.child.kill()];
  try {
    const traces = options.traces ? await startOtlpSink() : undefined;
    if (traces) cleanups.push(() => traces.close());
    const plan = [
      ...(options.a ? [['A', resolve(options.a), {}]] : []),
      ...(traces ? [['B-metrics', resolve(options.b), { metricsOff: true }]] : []),
      ['B', resolve(options.b), {}],
      ...(traces ? [['B+traces', resolve(options.b), { tracesEndpoint: traces.url }]] : []),
    ];
    for (const [name, build, telemetry] of plan) {
      const receiver = options.hooks ? await startWebhookReceiver() : undefined;
      if (receiver) cleanups.push(() => receiver.stop());
      const workspace = await ordersWorkspace(upstream.url, {
        ...(receiver ? { webhookUrl: receiver.url } : {}),
        ...telemetry,
      });
      const child = benchChild(
        fork(fileURLToPath(import.meta.url), ['child'], {
          env: { ...ENV, BENCH_BUILD: build, BENCH_CONFIG: workspace.configPath },
          stdio: 'inherit',
          execArgv: gatewayExecArgv(),
        }),
      );
      cleanups.push(() => child.kill());
      const mcpUrl = await new Promise((ready) => child.once('message', (message) => ready(message.mcpUrl)));
      sides.push({ name, build, child, mcpUrl, receiver, cpuMs: 0, calls: 0, seconds: 0, p50s: [] });
    }

    const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 30_000 });
    cleanups.push(() => agent.close());
    const { body, headers } = allowAllOrderCall();
    const call = async (url) => {
      const response = await request(url, { method: 'POST', headers, body, dispatcher: agent });
      const text = await response.body.text();
      if (response.statusCode !== 200 || !text.includes('ord_1001')) throw new Error(`unexpected answer ${response.statusCode}: ${text}`);
    };
    /** Waits (bounded) until a side's receiver has `count` events. */
    const eventsReached = async (side, count) => {
      if (!side.receiver) return;
      const deadline = Date.now() + 60_000;
      while ((await side.receiver.state()).received < count) {
        if (Date.now() > deadline) throw new Error(`side ${side.name}: events stopped short of ${count}`);
        await new Promise((wake) => setTimeout(wake, 10));
      }
    };

    const WARMUP = 300;
    for (const side of sides) for (let index = 0; index < WARMUP; index += 1) await call(side.mcpUrl);
    for (const side of sides) await eventsReached(side, WARMUP);
    for (let round = 0; round < ROUNDS; round += 1) {
      // Alternate which side goes first, so neither always runs on a machine just warmed (or slowed) by the other.
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        const cpuBefore = processStats(side.child.pid).cpuMs;
        const started = performance.now();
        const latencies = [];
        let next = 0;
        await Promise.all(
          Array.from({ length: CONCURRENCY }, async () => {
            while (next < CALLS) {
              next += 1;
              const begun = performance.now();
              await call(side.mcpUrl);
              latencies.push(performance.now() - begun);
            }
          }),
        );
        await eventsReached(side, WARMUP + (round + 1) * CALLS);
        side.seconds += (performance.now() - started) / 1000;
        side.cpuMs += processStats(side.child.pid).cpuMs - cpuBefore;
        side.calls += CALLS;
        latencies.sort((left, right) => left - right);
        side.p50s.push(percentile(latencies, 0.5));
      }
    }

    const what = options.hooks ? 'calls and their events' : 'calls';
    console.log(
      `${ROUNDS} interleaved rounds of ${CALLS} tools/call at concurrency ${CONCURRENCY}, receipts on${options.hooks ? ', events on' : ''}`,
    );
    for (const side of sides) {
      const p50s = [...side.p50s].sort((left, right) => left - right);
      console.log(
        `  ${side.name} (${side.build}): gateway CPU ${((side.cpuMs / side.calls) * 1000).toFixed(0)} µs/call, ` +
          `${Math.round(side.calls / side.seconds)} ${what}/s, p50 ${percentile(p50s, 0.5).toFixed(3)} ms (median of rounds)`,
      );
    }
    const [a, ...others] = sides;
    for (const b of others) {
      const p50 = (side) =>
        percentile(
          [...side.p50s].sort((left, right) => left - right),
          0.5,
        );
      console.log(
        `  ${b.name}/${a.name}: gateway CPU per call ${(b.cpuMs / b.calls / (a.cpuMs / a.calls)).toFixed(3)}, ` +
          `throughput ${(b.calls / b.seconds / (a.calls / a.seconds)).toFixed(3)}, p50 ${(p50(b) / p50(a)).toFixed(3)}`,
      );
    }
    if (traces) console.log(`  spans exported to the OTLP sink: ${traces.spans()}`);
    for (const side of sides) side.child.send('stop');
  } finally {
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  }
}

/** An OTLP/HTTP traces sink on loopback: reads each export, counts its spans, answers 200. */
async function startOtlpSink() {
  const { createServer } = await import('node:http');
  let spans = 0;
  const server = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      try {
        const exported = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const resource of exported.resourceSpans ?? [])
          for (const scope of resource.scopeSpans ?? []) spans += scope.spans?.length ?? 0;
      } catch {
        // Not JSON: counted as nothing.
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise((ready) => server.listen(0, '127.0.0.1', ready));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1/traces`,
    spans: () => spans,
    close: () => new Promise((done) => server.close(done)),
  };
}
