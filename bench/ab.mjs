// bench/ab: two builds of the gateway side by side in one run, to see what a change does to the call path.
// Single runs on a shared machine move by ±20 %; two gateways measured in interleaved rounds of one run see the
// same noise, so their ratio is what to read (an A/A run shows the floor, about ±5 % here).
//
//   git worktree add ../base main && (cd ../base && pnpm install && pnpm build)     # the build to compare with
//   pnpm build && node bench/ab.mjs --a ../base [--b .] [--hooks] [--concurrency 8] [--rounds 6] [--calls 2000] [--warmup 1500]
//                                  [--modes modern-raw,legacy-raw,legacy-sdk] [--lives 1] [--pin] [--instructions]
//
// Each side: its own workspace (its own CLI: import → review → publish, so each gateway reads a lock its own
// schema knows), the same example upstream, the allow-all authorizer of bench/support.mjs (this measures the
// call path, not OAuth), receipts on, and with --hooks a webhook endpoint with its own receiver (each round then
// waits for its events). Modes, each measured in its own interleaved rounds: `modern-raw` (2026-07-28 requests
// over undici), `legacy-raw` (2025-11-25 requests as SDK 1.x clients send them, over undici), `legacy-sdk` (the
// SDK 1.x client over Streamable HTTP, what mcp-remote uses). Per side and mode: gateway CPU per call (/proc,
// all threads), calls (and events) per second, the median of the rounds' p50, and that p50 minus the direct
// call's (the upstream asked without the gateway, in the same rounds): the p50 the gateway adds.
//
// --lives N: each side runs as N gateway processes ("lives": A#1…A#N), all measured in the same interleaved rounds,
// and each side's figures are summed over its lives. Identical builds in two processes differ by 5–10 % in CPU per
// call, and the difference holds for a whole life (every mode of it): one life per side cannot tell a 5 % change from
// which process drew the better life. Per side the lives' own figures are printed too, so the spread is visible.
//
// --pin: the gateways run on the second core only, this process and the upstream on the first (taskset, every
// thread), so the gateways never share a core with the client that loads them and each life runs where the others do.
//
// --instructions: each side's gateway process runs under valgrind's callgrind, and what is reported per side and
// mode is the instructions it executed per call (every thread: JIT code, V8, GC, libuv, SQLite), read with
// callgrind_control around each round's calls; the warm-up runs uninstrumented. The count does not depend on the
// machine's load, so a run of a few hundred calls per round says what a CPU run of thousands cannot on a shared
// machine (docs/performance.md › Instructions per call). Each call costs ~50× its time under callgrind:
//   node bench/ab.mjs --a ../base --instructions --rounds 2 --calls 300
import { execFileSync, fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  ENV,
  API_KEY,
  allowAllLegacyOrderCall,
  allowAllOrderCall,
  benchChild,
  callgrindCounter,
  callgrindFork,
  expectOrder,
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
      instructions: { type: 'boolean', default: false },
      concurrency: { type: 'string', default: '8' },
      rounds: { type: 'string', default: '6' },
      calls: { type: 'string', default: '2000' },
      warmup: { type: 'string', default: '1500' },
      modes: { type: 'string', default: 'modern-raw,legacy-raw,legacy-sdk' },
      lives: { type: 'string', default: '1' },
      pin: { type: 'boolean', default: false },
    },
  });
  const ROUNDS = Number(options.rounds);
  const CALLS = Number(options.calls);
  const CONCURRENCY = Number(options.concurrency);
  const LIVES = Number(options.lives);
  if (!(Number.isInteger(LIVES) && LIVES >= 1 && LIVES <= 8)) throw new Error('--lives 1..8');
  if (!options.a && !options.traces) throw new Error('--a <checkout> is required: the build to compare with (its packages/*/dist built)');
  if (!(ROUNDS >= 1 && ROUNDS <= 50 && CALLS >= 100 && CALLS <= 20_000 && CONCURRENCY >= 1 && CONCURRENCY <= 64))
    throw new Error('--rounds 1..50, --calls 100..20000, --concurrency 1..64');
  if (!(Number(options.warmup) >= 0 && Number(options.warmup) <= 20_000)) throw new Error('--warmup 0..20000');
  const MODES = options.modes.split(',').filter(Boolean);
  for (const mode of MODES)
    if (!['modern-raw', 'legacy-raw', 'legacy-sdk'].includes(mode)) throw new Error(`--modes: unknown mode ${mode}`);
  const { Agent, request } = await import(
    pathToFileURL(createRequire(resolve(root, 'packages/server/package.json')).resolve('undici')).href
  );

  // Under callgrind the gateway's timers run late: it reused connections the upstream had closed after 5 s idle.
  const upstream = await startUpstream(options.instructions ? { keepAliveMs: 600_000 } : {});
  /** --pin: every thread of `pid` on core `cpu` only. */
  const pin = (pid, cpu) => {
    if (options.pin) execFileSync('taskset', ['--all-tasks', '--cpu-list', '-p', String(cpu), String(pid)], { stdio: 'ignore' });
  };
  pin(process.pid, 0);
  pin(upstream.pid, 0);
  const sides = [];
  const cleanups = [() => upstream.child.kill()];
  try {
    const traces = options.traces ? await startOtlpSink() : undefined;
    if (traces) cleanups.push(() => traces.close());
    const plan = [
      ...(options.a ? [['A', resolve(options.a), {}]] : []),
      ...(traces ? [['B-metrics', resolve(options.b.split(',')[0]), { metricsOff: true }]] : []),
      // `--b <checkout>[,<checkout>…]`: further builds are B2, B3… (a change before and after, against one A).
      ...options.b.split(',').map((build, index) => [index === 0 ? 'B' : `B${index + 1}`, resolve(build), {}]),
      ...(traces ? [['B+traces', resolve(options.b.split(',')[0]), { tracesEndpoint: traces.url }]] : []),
    ];
    // With --lives N, each side of the plan is N processes; their figures are summed per side (`group`). They
    // start in turns (A#1, B#1, A#2, B#2, …), so no side's processes are all younger than the other's.
    const lives = Array.from({ length: LIVES }, (_, life) =>
      plan.map(([name, build, telemetry]) => [LIVES > 1 ? `${name}#${life + 1}` : name, build, telemetry, name]),
    ).flat();
    for (const [name, build, telemetry, group] of lives) {
      const receiver = options.hooks ? await startWebhookReceiver() : undefined;
      if (receiver) cleanups.push(() => receiver.stop());
      const workspace = await ordersWorkspace(upstream.url, { build, ...(receiver ? { webhookUrl: receiver.url } : {}), ...telemetry });
      const callgrind = options.instructions ? callgrindFork() : undefined;
      const child = benchChild(
        fork(fileURLToPath(import.meta.url), ['child'], {
          env: { ...ENV, BENCH_BUILD: build, BENCH_CONFIG: workspace.configPath },
          stdio: 'inherit',
          ...(callgrind ? { execPath: callgrind.execPath, execArgv: callgrind.execArgv } : { execArgv: gatewayExecArgv() }),
        }),
      );
      cleanups.push(() => child.kill());
      const mcpUrl = await new Promise((ready) => child.once('message', (message) => ready(message.mcpUrl)));
      // After start-up: the threads the gateway starts as it starts (V8's, libuv's, the checkpointer) exist by now.
      pin(child.pid, 1);
      const counter = callgrind ? callgrindCounter(child.pid, callgrind.directory) : undefined;
      sides.push({ name, group, build, child, mcpUrl, receiver, counter, events: 0 });
    }

    let agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 30_000 });
    cleanups.push(() => agent.close());
    /** New connections: under callgrind one side's turn outlasts the other's keep-alive (Fastify closes after 72 s). */
    const reconnect = async () => {
      await agent.close();
      agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 30_000 });
    };
    const post = async (url, { body, headers }) => {
      const response = await request(url, { method: 'POST', headers, body, dispatcher: agent });
      expectOrder(response.statusCode, await response.body.text());
    };
    const modern = allowAllOrderCall();
    const legacy = allowAllLegacyOrderCall();
    /** What one call is, per mode and side (legacy-sdk: one SDK 1.x client per side, connected once). */
    const callers = async (mode) => {
      if (mode === 'modern-raw') return sides.map((side) => () => post(side.mcpUrl, modern));
      if (mode === 'legacy-raw') return sides.map((side) => () => post(side.mcpUrl, legacy));
      // The SDK 1.x client's transport hangs every request's abort listener on one long-lived signal; Node's
      // MaxListenersExceededWarning about it (in this process, not the gateway's) would bury the figures.
      process.removeAllListeners('warning');
      const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
      const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      return Promise.all(
        sides.map(async (side) => {
          const client = new Client({ name: 'bench-ab', version: '1.0.0' });
          await client.connect(
            new StreamableHTTPClientTransport(new URL(side.mcpUrl), { requestInit: { headers: { authorization: 'Bearer bench' } } }),
          );
          cleanups.push(() => client.close());
          return async () => {
            const result = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } });
            expectOrder(result.isError ? 500 : 200, JSON.stringify(result));
          };
        }),
      );
    };
    const direct = async () => {
      const response = await request(`${upstream.url}/orders/ord_1001`, { headers: { 'x-api-key': API_KEY }, dispatcher: agent });
      expectOrder(response.statusCode, await response.body.text());
    };
    /** Waits (bounded) until a side's receiver has every event of the calls made so far. */
    const eventsReached = async (side) => {
      if (!side.receiver) return;
      const deadline = Date.now() + 60_000;
      while ((await side.receiver.state()).received < side.events) {
        if (Date.now() > deadline) throw new Error(`side ${side.name}: events stopped short of ${side.events}`);
        await new Promise((wake) => setTimeout(wake, 10));
      }
    };
    /** `count` calls of `call` at CONCURRENCY: the sorted latencies (ms). */
    const burst = async (call, count) => {
      const latencies = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < count) {
            next += 1;
            const begun = performance.now();
            await call();
            latencies.push(performance.now() - begun);
          }
        }),
      );
      return latencies.sort((left, right) => left - right);
    };

    /** --instructions: per round and side, the instructions its gateway executes for CALLS calls (and their events). */
    const countInstructions = async (mode, calls) => {
      const perCall = sides.map(() => []);
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const [index, side] of sides.entries()) {
          await reconnect();
          side.counter.start();
          await burst(calls[index], CALLS);
          side.events += CALLS;
          await eventsReached(side);
          perCall[index].push(side.counter.read() / CALLS);
          side.counter.stop();
        }
      }
      const spread = (values) => `${Math.round(Math.min(...values))}–${Math.round(Math.max(...values))}`;
      const mean = (values) => values.reduce((sum, value) => sum + value, 0) / values.length;
      console.log(mode);
      for (const [index, side] of sides.entries())
        console.log(
          `  ${side.name} (${side.build}): ${Math.round(mean(perCall[index]))} instructions/call (rounds: ${spread(perCall[index])})`,
        );
      for (const [index, side] of sides.entries())
        if (index > 0)
          console.log(`  ${side.name}/${sides[0].name}: instructions per call ${(mean(perCall[index]) / mean(perCall[0])).toFixed(3)}`);
    };
    // Calls per side and mode before the first measured round: V8 optimises a function after some thousands of
    // runs, and the build with more (or differently split) code gets there later; 300 left the first mode of each
    // run measuring a partly unoptimised gateway (docs/performance.md).
    const WARMUP = Number(options.warmup);
    const what = options.hooks ? 'calls and their events' : 'calls';
    console.log(
      `${ROUNDS} ${options.instructions ? 'callgrind' : 'interleaved'} rounds of ${CALLS} tools/call at concurrency ` +
        `${CONCURRENCY} per mode, receipts on${options.hooks ? ', events on' : ''}`,
    );
    for (const mode of MODES) {
      const calls = await callers(mode);
      const figures = sides.map(() => ({ cpuMs: 0, calls: 0, seconds: 0, p50s: [] }));
      const directP50s = [];
      await burst(direct, WARMUP);
      for (const [index, side] of sides.entries()) {
        await burst(calls[index], WARMUP);
        side.events += WARMUP;
        await eventsReached(side);
      }
      if (options.instructions) {
        await countInstructions(mode, calls);
        continue;
      }
      for (let round = 0; round < ROUNDS; round += 1) {
        directP50s.push(percentile(await burst(direct, CALLS), 0.5));
        // Alternate which side goes first, so neither always runs on a machine just warmed (or slowed) by the other.
        const order = round % 2 === 0 ? [...sides.keys()] : [...sides.keys()].reverse();
        for (const index of order) {
          const side = sides[index];
          const figure = figures[index];
          const cpuBefore = processStats(side.child.pid).cpuMs;
          const started = performance.now();
          const latencies = await burst(calls[index], CALLS);
          side.events += CALLS;
          await eventsReached(side);
          figure.seconds += (performance.now() - started) / 1000;
          figure.cpuMs += processStats(side.child.pid).cpuMs - cpuBefore;
          figure.calls += CALLS;
          figure.p50s.push(percentile(latencies, 0.5));
        }
      }
      const median = (values) =>
        percentile(
          [...values].sort((left, right) => left - right),
          0.5,
        );
      const directP50 = median(directP50s);
      console.log(`${mode} (direct call p50 ${directP50.toFixed(3)} ms)`);
      for (const [index, side] of sides.entries()) {
        const figure = figures[index];
        figure.added = median(figure.p50s) - directP50;
        console.log(
          `  ${side.name} (${side.build}): gateway CPU ${((figure.cpuMs / figure.calls) * 1000).toFixed(0)} µs/call, ` +
            `${Math.round(figure.calls / figure.seconds)} ${what}/s, p50 ${median(figure.p50s).toFixed(3)} ms ` +
            `(median of rounds), added p50 ${figure.added.toFixed(3)} ms`,
        );
      }
      // Per side (a group of lives): CPU and calls summed over its lives, p50 the median of all their rounds.
      const groups = [...new Set(sides.map((side) => side.group))].map((group) => {
        const members = figures.filter((_, index) => sides[index].group === group);
        const sum = (key) => members.reduce((total, figure) => total + figure[key], 0);
        const added = median(members.flatMap((figure) => figure.p50s)) - directP50;
        return { group, cpuMs: sum('cpuMs'), calls: sum('calls'), seconds: sum('seconds'), added, members };
      });
      if (LIVES > 1)
        for (const group of groups) {
          const perLife = group.members.map((figure) => ((figure.cpuMs / figure.calls) * 1000).toFixed(0));
          console.log(
            `  ${group.group} over ${LIVES} lives: gateway CPU ${((group.cpuMs / group.calls) * 1000).toFixed(0)} µs/call ` +
              `(lives: ${perLife.join(', ')}), added p50 ${group.added.toFixed(3)} ms`,
          );
        }
      const [a, ...others] = groups;
      for (const b of others) {
        console.log(
          `  ${b.group}/${a.group}: gateway CPU per call ${(b.cpuMs / b.calls / (a.cpuMs / a.calls)).toFixed(3)}, ` +
            `added p50 ${(b.added / a.added).toFixed(3)}, throughput ${(b.calls / b.seconds / (a.calls / a.seconds)).toFixed(3)}`,
        );
      }
    }
    if (traces) console.log(`spans exported to the OTLP sink: ${traces.spans()}`);
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
