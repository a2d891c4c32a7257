// bench/peers: the gateway next to two OpenAPI→MCP peers and the direct call, in one run, one table.
//
//   pnpm bench:peers                      (builds, then: node bench/peers/run.mjs)
//   node bench/peers/run.mjs --calls 3000 --warmup 1000 --workers 2 [--only floor,2025,2026,ivotoby,generator]
//   (--only 2025 is both 2025-11-25 rows; 2025-sdk and 2025-raw name one of them)
//
// Targets, all answering `GET /orders/{id}` of the example upstream (examples/orders-api/server.mjs):
// - direct: the upstream itself, plain HTTP (undici);
// - floor: the same SDK 1.x client against a server that answers at once with fixed JSON (no upstream, no
//   checks): what this client costs by itself, the least any MCP server over HTTP can add for it;
// - gateway 2025-11-25: the MCP SDK 1.x client over Streamable HTTP, a real OAuth session (bench/oauth-session.mjs),
//   and the same era with raw requests (undici) as the 2026 row, so the two eras compare like for like;
// - gateway 2026-07-28: raw requests (undici), the same session;
// The gateway runs with receipts and events on: a webhook endpoint in gateway.yaml and a receiver in its own
// process; the run fails unless every receipted call's event was delivered.
// - gateway 2026-07-28 ×N workers (with --workers N): `gateway serve --workers N`, raw requests;
// - @ivotoby/openapi-mcp-server 1.16.1: the same SDK 1.x client over Streamable HTTP, no auth;
// - openapi-mcp-generator 4.0.1: its generated server, generated into a temporary folder at run time (never
//   committed), over stdio with the same SDK 1.x client, no auth.
// Per target: warm-up, then `--calls` calls at concurrency 1 (latency) and at concurrency 16 (throughput);
// CPU per call of each process from /proc (target, upstream, this client process) and RSS after load; for the
// gateway rows, read once every call's event has been delivered, and the c=16 rate to the last delivery.
// The peers are development dependencies of this bench only (bench/peers/package.json), installed here on
// first run with npm into bench/peers/node_modules (git-ignored).
import { execFileSync, spawn } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  API_KEY,
  benchChild,
  benchDirectory,
  freePort,
  legacyRequest,
  modernRequest,
  ordersWorkspace,
  percentile,
  processStats,
  processTree,
  root,
  sessionToken,
  startCannedMcpServer,
  startGatewayChild,
  startGatewayWorkers,
  startUpstream,
  startWebhookReceiver,
  treeStats,
  waitForHttp,
} from '../support.mjs';

// The SDK 1.x client's Streamable HTTP transport adds one abort listener per request to its long-lived
// signal and never removes it; without this, thousands of "possible EventTarget memory leak" warnings drown
// the table (the listeners are the client's cost, counted in its CPU column either way).
setMaxListeners(0);
const here = fileURLToPath(new URL('.', import.meta.url));
const { values: options } = parseArgs({
  options: {
    // The direct rows run first: with fewer calls or a shorter warm-up their client and upstream are still being
    // compiled while measured (seen: half the direct throughput at --calls 1000 --warmup 200), which flatters
    // every ratio against them.
    calls: { type: 'string', default: '3000' },
    warmup: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '16' },
    workers: { type: 'string', default: '0' },
    only: { type: 'string' },
  },
});
const CALLS = Number(options.calls);
const WARMUP = Number(options.warmup);
const CONCURRENCY = Number(options.concurrency);
const WORKERS = Number(options.workers);
if (!(CALLS > 0 && CALLS <= 20_000) || !(WARMUP >= 0) || !(CONCURRENCY >= 1))
  throw new Error('--calls must be 1..20000, --warmup ≥ 0, --concurrency ≥ 1');

/** Installs the pinned peers into bench/peers/node_modules when they are missing or at another version. */
function ensurePeers() {
  const wanted = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).devDependencies;
  const isInstalled = Object.entries(wanted).every(([name, version]) => {
    const manifest = join(here, 'node_modules', name, 'package.json');
    return existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).version === version;
  });
  if (isInstalled) return;
  console.error('installing the peers into bench/peers/node_modules (first run)…');
  execFileSync('npm', ['install', '--prefix', here, '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error'], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

ensurePeers();
const peersRequire = createRequire(join(here, 'package.json'));
const importPeer = (specifier) => import(pathToFileURL(peersRequire.resolve(specifier)).href);
const { Client } = await importPeer('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = await importPeer('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport } = await importPeer('@modelcontextprotocol/sdk/client/stdio.js');
const { Agent, request } = await import(pathToFileURL(createRequire(join(root, 'packages/server/package.json')).resolve('undici')).href);
const typescript = createRequire(join(root, 'package.json'))('typescript');

const agent = new Agent({ connections: 64, pipelining: 1, keepAliveTimeout: 30_000 });
const EXPECT = 'Ada Lovelace';

/** Raw HTTP through undici: the direct call and the 2026-07-28 gateway. */
function rawCaller(target) {
  return async () => {
    const response = await request(target.url, { method: target.method, headers: target.headers, body: target.body, dispatcher: agent });
    const text = await response.body.text();
    if (response.statusCode >= 400 || !text.includes(EXPECT))
      throw new Error(`unexpected answer ${response.statusCode}: ${text.slice(0, 300)}`);
  };
}

/** The SDK 1.x client (what most deployed clients are): one connected client, calls concurrently. */
async function sdkCaller(transport, toolName) {
  const client = new Client({ name: 'gateway-bench-peers', version: '1.0.0' });
  await client.connect(transport);
  const call = async () => {
    const result = await client.callTool({ name: toolName, arguments: { orderId: 'ord_1001' } });
    const text = JSON.stringify(result.content);
    if (result.isError || !text.includes(EXPECT)) throw new Error(`unexpected tool result: ${text.slice(0, 300)}`);
  };
  return { call, close: () => client.close() };
}

async function phase(call, count, concurrency) {
  const latencies = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next += 1;
        const begun = performance.now();
        await call();
        latencies.push(performance.now() - begun);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    calls: latencies.length,
    callsPerSecond: latencies.length / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
  };
}

/**
 * Warm-up, c=1, c=16; CPU of the target's processes, the upstream and this process over the measured calls.
 * `delivered` (gateway rows, events on): resolves once the receiver holds the event of every call made so far.
 * Event delivery is sequential per endpoint and can trail the calls at c=16, so the CPU is read only once it
 * has caught up (the gateway's CPU per call includes delivering the call's event), and the row also gets the
 * c=16 rate counted to the last event's delivery ("c16.deliveredPerSecond").
 */
async function measure(name, call, pids, upstreamPid, delivered) {
  for (let index = 0; index < WARMUP; index += 1) await call();
  if (delivered) await delivered(WARMUP);
  const before = { target: treeStats(pids()), upstream: processStats(upstreamPid).cpuMs, client: process.cpuUsage() };
  const c1 = await phase(call, CALLS, 1);
  if (delivered) await delivered(CALLS);
  const c16Started = performance.now();
  const c16 = await phase(call, CALLS, CONCURRENCY);
  if (delivered) {
    await delivered(CALLS);
    c16.deliveredPerSecond = c16.calls / ((performance.now() - c16Started) / 1000);
  }
  const after = { target: treeStats(pids()), upstream: processStats(upstreamPid).cpuMs, client: process.cpuUsage(before.client) };
  const total = c1.calls + c16.calls;
  const row = {
    name,
    c1,
    c16,
    cpuMsPerCall: {
      target: (after.target.cpuMs - before.target.cpuMs) / total,
      upstream: (after.upstream - before.upstream) / total,
      client: (after.client.user + after.client.system) / 1000 / total,
    },
    rssMb: after.target.rss / 1024 / 1024,
  };
  console.error(`  ${name}: p50 ${c1.p50.toFixed(3)} ms, c=${CONCURRENCY} ${Math.round(c16.callsPerSecond)} calls/s`);
  return row;
}

const cleanups = [];
const rows = [];
let eventsLine = '';
// --only parts, each matched within a key: `2025` is both 2025-11-25 rows, `2025-raw` only the raw one.
const wanted = (key) => !options.only || options.only.split(',').some((part) => key.includes(part));
try {
  const upstream = await startUpstream();
  cleanups.push(() => upstream.child.kill());

  // The direct call: the upstream, as the gateway calls it.
  const directCall = rawCaller({
    url: `${upstream.url}/orders/ord_1001`,
    method: 'GET',
    headers: { 'x-api-key': API_KEY, accept: 'application/json' },
  });
  rows.push(await measure('direct (upstream, undici)', directCall, () => [upstream.pid], upstream.pid));
  // The same call with fetch(), the HTTP client the SDK 1.x client's transport uses (and most applications):
  // the second reference column, since undici.request is the cheapest client Node has.
  const fetchCall = async () => {
    const response = await fetch(`${upstream.url}/orders/ord_1001`, { headers: { 'x-api-key': API_KEY, accept: 'application/json' } });
    const text = await response.text();
    if (response.status >= 400 || !text.includes(EXPECT)) throw new Error(`unexpected answer ${response.status}: ${text.slice(0, 300)}`);
  };
  rows.push(await measure('direct (upstream, fetch)', fetchCall, () => [upstream.pid], upstream.pid));

  // The floor of the SDK 1.x client: the same client against a server that does no work at all. Its added
  // p50 is what any MCP server over HTTP costs this client before doing anything.
  if (wanted('floor')) {
    const canned = await startCannedMcpServer(`{"id":"ord_1001","customer":"${EXPECT}"}`);
    cleanups.push(() => canned.stop());
    const floor = await sdkCaller(new StreamableHTTPClientTransport(new URL(canned.url)), 'get_order');
    rows.push(await measure('floor: SDK 1.x client → canned answer (no work)', floor.call, () => [canned.pid], upstream.pid));
    await floor.close();
    canned.stop();
  }

  // The gateway: one process (as `gateway serve`), a real session, receipts on (the default) and events on:
  // every receipt becomes a signed CloudEvents webhook to a receiver in its own process.
  console.error('preparing the gateway (signed lock, account, session, webhook receiver)…');
  const receiver = await startWebhookReceiver();
  cleanups.push(() => receiver.stop());
  const workspace = await ordersWorkspace(upstream.url, { vault: WORKERS > 1 ? 'file' : 'env', webhookUrl: receiver.url });
  const gatewayChild = startGatewayChild(workspace.configPath, {
    execArgv: process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [],
  });
  cleanups.push(() => gatewayChild.stop());
  const ready = await gatewayChild.ready;
  const token = await sessionToken(ready, ['get_order']);
  // Tool calls made through this gateway so far: each has one event for the receiver.
  let gatewayCallsMade = 0;
  const eventsDelivered = async (calls) => {
    gatewayCallsMade += calls;
    const deadline = Date.now() + 30_000;
    while ((await receiver.state()).received < gatewayCallsMade) {
      if (Date.now() > deadline) throw new Error(`events not delivered within 30 s of ${gatewayCallsMade} calls`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };
  if (wanted('2025-sdk')) {
    const legacy = await sdkCaller(
      new StreamableHTTPClientTransport(new URL(ready.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
      'get_order',
    );
    rows.push(await measure('gateway, 2025-11-25 (SDK 1.x client)', legacy.call, () => [gatewayChild.pid], upstream.pid, eventsDelivered));
    await legacy.close();
  }
  if (wanted('2025-raw')) {
    const legacy = rawCaller(legacyRequest(ready.mcpUrl, token, 'tools/call', { name: 'get_order', arguments: { orderId: 'ord_1001' } }));
    rows.push(await measure('gateway, 2025-11-25 (raw requests)', legacy, () => [gatewayChild.pid], upstream.pid, eventsDelivered));
  }
  if (wanted('2026')) {
    const modern = rawCaller(
      modernRequest(ready.mcpUrl, token, 'tools/call', { name: 'get_order', arguments: { orderId: 'ord_1001' } }, 'get_order'),
    );
    rows.push(await measure('gateway, 2026-07-28 (raw requests)', modern, () => [gatewayChild.pid], upstream.pid, eventsDelivered));
  }
  // Events on, proven: every receipted call's event reached the receiver (delivery trails the calls a little).
  const gatewayCalls = rows.filter((row) => row.name.startsWith('gateway')).reduce((sum, row) => sum + row.c1.calls + row.c16.calls, 0);
  const deadline = Date.now() + 30_000;
  let delivered = (await receiver.state()).received;
  while (delivered < gatewayCalls && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    delivered = (await receiver.state()).received;
  }
  if (gatewayCalls > 0)
    eventsLine = `events delivered to the webhook receiver: ${delivered} (≥ ${gatewayCalls} measured gateway calls, plus warm-up)`;
  if (delivered < gatewayCalls) throw new Error(`only ${delivered} events delivered for ${gatewayCalls} receipted calls`);
  await gatewayChild.stop();

  if (WORKERS > 1) {
    const cluster = await startGatewayWorkers(workspace, WORKERS);
    cleanups.push(() => cluster.stop());
    const clusterToken = await sessionToken(cluster, ['get_order']);
    const modern = rawCaller(
      modernRequest(cluster.mcpUrl, clusterToken, 'tools/call', { name: 'get_order', arguments: { orderId: 'ord_1001' } }, 'get_order'),
    );
    rows.push(await measure(`gateway ×${WORKERS} workers, 2026-07-28 (raw)`, modern, () => processTree(cluster.pid), upstream.pid));
    const legacy = await sdkCaller(
      new StreamableHTTPClientTransport(new URL(cluster.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${clusterToken}` } } }),
      'get_order',
    );
    rows.push(
      await measure(`gateway ×${WORKERS} workers, 2025-11-25 (SDK 1.x)`, legacy.call, () => processTree(cluster.pid), upstream.pid),
    );
    await legacy.close();
    await cluster.stop();
  }

  const documentPath = join(workspace.directory, 'openapi.yaml');

  // @ivotoby/openapi-mcp-server over Streamable HTTP, the upstream's key as a static header.
  if (wanted('ivotoby')) {
    const port = await freePort();
    const ivotoby = benchChild(
      spawn(
        process.execPath,
        [
          join(here, 'node_modules', '@ivotoby', 'openapi-mcp-server', 'bin', 'mcp-server.js'),
          '--transport',
          'http',
          '--host',
          '127.0.0.1',
          '--port',
          String(port),
          '--path',
          '/mcp',
          '--api-base-url',
          upstream.url,
          '--openapi-spec',
          documentPath,
          '--headers',
          `X-API-Key:${API_KEY}`,
        ],
        { stdio: 'ignore' },
      ),
    );
    cleanups.push(() => ivotoby.kill());
    await waitForHttp(`http://127.0.0.1:${port}/mcp`);
    const peer = await sdkCaller(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)), 'get-order');
    rows.push(await measure('@ivotoby/openapi-mcp-server 1.16.1 (HTTP, no auth)', peer.call, () => [ivotoby.pid], upstream.pid));
    await peer.close();
    ivotoby.kill();
  }

  // openapi-mcp-generator: generate a stdio server into a temporary folder inside bench/peers (so its imports
  // resolve to bench/peers/node_modules), transpile it with the workspace's TypeScript, run it over stdio.
  if (wanted('generator')) {
    const generated = benchDirectory('.generated-', here);
    execFileSync(
      process.execPath,
      [
        join(here, 'node_modules', 'openapi-mcp-generator', 'bin', 'openapi-mcp-generator.js'),
        '--input',
        documentPath,
        '--output',
        join(generated, 'server'),
        '--base-url',
        upstream.url,
        '--transport',
        'stdio',
        '--force',
      ],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    const source = await readFile(join(generated, 'server', 'src', 'index.ts'), 'utf8');
    const { outputText } = typescript.transpileModule(source, {
      compilerOptions: { module: typescript.ModuleKind.ESNext, target: typescript.ScriptTarget.ES2022 },
    });
    await mkdir(join(generated, 'server', 'build'), { recursive: true });
    await writeFile(join(generated, 'server', 'build', 'index.js'), outputText);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(generated, 'server', 'build', 'index.js')],
      env: { PATH: process.env.PATH ?? '', API_BASE_URL: upstream.url, API_KEY_API_KEY: API_KEY },
      stderr: 'ignore',
    });
    const peer = await sdkCaller(transport, 'getOrder');
    rows.push(await measure('openapi-mcp-generator 4.0.1 (stdio, no auth)', peer.call, () => [transport.pid], upstream.pid));
    await peer.close();
  }

  const direct = rows[0];
  const directFetch = rows[1];
  const signed = (ms) => `${ms >= 0 ? '+' : '−'}${Math.abs(ms).toFixed(3)} ms`;
  const table = [
    [
      'target',
      'p50 ms',
      'added p50',
      'added p99',
      `c=${CONCURRENCY} calls/s`,
      'events delivered/s',
      'vs direct',
      'vs fetch',
      'CPU ms/call: target',
      'upstream',
      'client',
      'RSS MB',
    ],
    ...rows.map((row) => [
      row.name,
      row.c1.p50.toFixed(3),
      row === direct ? '—' : signed(row.c1.p50 - direct.c1.p50),
      row === direct ? '—' : signed(row.c1.p99 - direct.c1.p99),
      String(Math.round(row.c16.callsPerSecond)),
      row.c16.deliveredPerSecond === undefined ? '—' : String(Math.round(row.c16.deliveredPerSecond)),
      `${Math.round((row.c16.callsPerSecond / direct.c16.callsPerSecond) * 100)} %`,
      `${Math.round((row.c16.callsPerSecond / directFetch.c16.callsPerSecond) * 100)} %`,
      row.cpuMsPerCall.target.toFixed(3),
      row.cpuMsPerCall.upstream.toFixed(3),
      row.cpuMsPerCall.client.toFixed(3),
      String(Math.round(row.rssMb)),
    ]),
  ];
  const widths = table[0].map((_, column) => Math.max(...table.map((row) => row[column].length)));
  console.log(table.map((row) => row.map((cell, column) => cell.padEnd(widths[column])).join('  ')).join('\n'));
  if (eventsLine) console.log(`\n${eventsLine}`);
  console.log(
    `\n${CALLS} calls per phase per target after ${WARMUP} warm-up calls; ` +
      `${availableParallelism()} cores (${cpus()[0]?.model ?? '?'}), Node ${process.version}. ` +
      'CPU: /proc utime+stime per measured call (10 ms ticks). The SDK-client rows include the SDK client\'s own cost (column "client"); ' +
      'the raw rows use undici. "added" is against the undici direct row; "vs fetch" divides by the fetch direct row. ' +
      '"events delivered/s": the c=16 calls over the time until the last one\'s event reached the receiver (delivery is ' +
      "sequential per endpoint and may trail the answers); the gateway rows' CPU is read after it caught up. " +
      '"RSS MB": one reading after the c=16 burst, in a gateway process that has served every row before it; the memory ' +
      'figure (30,000 calls of one era, sampled after collections) is bench/memory.mjs. ' +
      'Figures are noisy on a shared machine: compare rows of one run.',
  );
  await mkdir(join(root, 'bench', 'results'), { recursive: true });
  await writeFile(
    join(root, 'bench', 'results', 'peers.json'),
    `${JSON.stringify(
      { calls: CALLS, warmup: WARMUP, concurrency: CONCURRENCY, node: process.version, cores: availableParallelism(), rows },
      null,
      2,
    )}\n`,
  );
} finally {
  for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  await agent.close();
}
