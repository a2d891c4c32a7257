// bench/eras: the same tools/call through the gateway in both MCP eras, side by side in one run, with the
// clients deployed today: the SDK 1.x client (2025-11-25 over Streamable HTTP, what mcp-remote uses), the
// SDK v2 client (2026-07-28), and raw requests of each era over undici (the protocol cost without a client's).
// Authentication is on (a real OAuth session). Prints, per target: p50/p99 at c=1, p50 added to the direct
// call, the gateway process's CPU per call (/proc, Linux), and calls/s at c=16 against direct. Bounded to
// well under a minute. Run after `pnpm build`: node bench/eras.mjs
import { execFileSync, fork, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { obtainAccessToken } from './oauth-session.mjs';
import { benchChild, benchDirectory, gatewayExecArgv, RECEIPTS_KEY_ENV } from './support.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'packages', 'cli', 'dist', 'main.js');
const serverRequire = createRequire(join(root, 'packages/server/package.json'));
const { Agent, request } = await import(pathToFileURL(serverRequire.resolve('undici')).href);
const { Client: ModernClient, StreamableHTTPClientTransport: ModernTransport } = await import(
  pathToFileURL(serverRequire.resolve('@modelcontextprotocol/client')).href
);
const { Client: LegacyClient } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport: LegacyTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');

const API_KEY = 'bench-orders-key';
const CALLS = Number(process.env.BENCH_CALLS ?? 1500);
const WARMUP = 300;
const C16_MS = Number(process.env.BENCH_C16_MS ?? 2500);
const ENV = { ...process.env, ...RECEIPTS_KEY_ENV, GATEWAY_SECRET_ORDERS_API_KEY: API_KEY, NO_COLOR: '1' };
const PERSON = { name: 'bench', password: 'bench correct horse battery staple' };
const CLOCK_TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function gateway(args, cwd, input) {
  execFileSync(process.execPath, [cli, ...args], {
    cwd,
    env: ENV,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'],
    input,
  });
}

/** CPU seconds (user + system) the process has used so far, from /proc/<pid>/stat. */
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

// The SDK 1.x client's transport hangs every request's abort listener on one long-lived signal; Node's
// MaxListenersExceededWarning about it (in this process, not the gateway's) would bury the table.
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  if (warning.name !== 'MaxListenersExceededWarning') console.error(warning);
});

const percentile = (sorted, fraction) => sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))];
const ROUNDS = 3;

/**
 * `CALLS` sequential calls per target, in `ROUNDS` interleaved rounds (the machine is shared: a burst of
 * someone else's load then spreads over every target instead of landing on one), after a warm-up of each:
 * latency percentiles and the gateway's CPU per call.
 */
async function sequential(targets, pid) {
  for (const target of targets) for (let index = 0; index < WARMUP; index += 1) await target.call();
  const stats = targets.map(() => ({ latencies: [], cpu: 0 }));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [index, target] of targets.entries()) {
      const cpuBefore = cpuSeconds(pid);
      for (let call = 0; call < CALLS / ROUNDS; call += 1) {
        const started = performance.now();
        await target.call();
        stats[index].latencies.push(performance.now() - started);
      }
      stats[index].cpu += cpuSeconds(pid) - cpuBefore;
    }
  }
  return targets.map((target, index) => {
    const latencies = stats[index].latencies.sort((a, b) => a - b);
    const cpuMs = target.viaGateway ? (stats[index].cpu * 1000) / latencies.length : undefined;
    return { name: target.name, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), cpuMs };
  });
}

/** Calls per second with 16 calls in flight for `C16_MS`. */
async function concurrent(call) {
  let calls = 0;
  const until = performance.now() + C16_MS;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (performance.now() < until) {
        await call();
        calls += 1;
      }
    }),
  );
  return calls / ((performance.now() - started) / 1000);
}

let upstream;
let child;
let directory;
try {
  const upstreamPort = await freePort();
  upstream = benchChild(
    spawn(process.execPath, [join(root, 'examples', 'orders-api', 'server.mjs'), '--port', String(upstreamPort), '--api-key', API_KEY], {
      stdio: 'ignore',
    }),
  );
  const upstreamUrl = `http://127.0.0.1:${upstreamPort}`;
  for (let attempt = 0; ; attempt += 1) {
    try {
      await fetch(`${upstreamUrl}/orders`);
      break;
    } catch (error) {
      if (attempt > 200) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  // A signed lock made by the real CLI, as in bench/server.mjs.
  directory = benchDirectory('gateway-bench-eras-');
  const port = await freePort();
  const example = await readFile(join(root, 'examples', 'orders-api', 'openapi.yaml'), 'utf8');
  await writeFile(join(directory, 'openapi.yaml'), example.replace('http://127.0.0.1:4010', upstreamUrl));
  await writeFile(
    join(directory, 'gateway.yaml'),
    [
      `gateway: { url: 'http://127.0.0.1:${port}', listen: '127.0.0.1:${port}' }`,
      'sources:',
      '  orders:',
      '    kind: openapi',
      '    document: openapi.yaml',
      '    credentials: { api_key: { type: apiKey, secret: orders-api-key } }',
      'trust: { keys: [keys/publisher.pub.jwk] }',
      'network: { allowPrivateNetworks: [127.0.0.1/32] }',
      'vault: { provider: env }',
      'drift: { enabled: false }',
      'auth: { sessions: { lifetimeChoicesSeconds: [900, 3600] }, tokens: { accessTokenSeconds: 3600 } }',
      '',
    ].join('\n'),
  );
  console.error('preparing a signed lock with the CLI…');
  gateway(['keys', 'generate', '--out', 'keys'], directory);
  gateway(['import', 'orders'], directory);
  gateway(['review', 'orders', '--all-supported', '--no-interactive'], directory);
  gateway(['publish', 'orders', '--key', 'keys/publisher.private.jwk', '--publisher', 'bench@example.com'], directory);
  gateway(['people', 'add', PERSON.name], directory, PERSON.password);

  const log = openSync(join(directory, 'gateway.log'), 'a');
  child = benchChild(
    fork(join(root, 'bench', 'gateway-child.mjs'), [], {
      env: { ...ENV, BENCH_CONFIG: join(directory, 'gateway.yaml') },
      stdio: ['ignore', 'inherit', log, 'ipc'],
      // BENCH_CPU_PROF=<dir>: a V8 CPU profile of the gateway process, written when it stops.
      execArgv: gatewayExecArgv(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
    }),
  );
  closeSync(log);
  const ready = await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`gateway child exited ${code}`)));
    child.on('message', (message) => message.type === 'ready' && resolve(message));
  });
  const { accessToken } = await obtainAccessToken({
    issuer: ready.url,
    mcpUrl: ready.mcpUrl,
    person: PERSON.name,
    password: PERSON.password,
    tools: ready.toolNames,
    logins: ['orders/api_key'],
    lifetimeSeconds: 3600,
  });
  const authorization = `Bearer ${accessToken}`;
  const args = { status: 'shipped' };
  const expectShipped = (text) => {
    if (!text.includes('ord_1002')) throw new Error(`unexpected answer: ${text.slice(0, 300)}`);
  };

  const agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  const raw = (url, init) => async () => {
    const response = await request(url, { ...init, dispatcher: agent });
    const text = await response.body.text();
    if (response.statusCode >= 400) throw new Error(`HTTP ${response.statusCode}: ${text.slice(0, 300)}`);
    expectShipped(text);
  };
  const direct = raw(`${upstreamUrl}/orders?status=shipped`, {
    method: 'GET',
    headers: { 'x-api-key': API_KEY, accept: 'application/json' },
  });
  const modernRaw = raw(ready.mcpUrl, {
    method: 'POST',
    headers: {
      authorization,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'search_orders',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'search_orders',
        arguments: args,
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
      },
    }),
  });
  // Exactly what the SDK 1.x client sends after initialize.
  const legacyRaw = raw(ready.mcpUrl, {
    method: 'POST',
    headers: {
      authorization,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ method: 'tools/call', params: { name: 'search_orders', arguments: args }, jsonrpc: '2.0', id: 1 }),
  });
  const legacyClient = new LegacyClient({ name: 'bench-v1', version: '1.0.0' });
  await legacyClient.connect(new LegacyTransport(new URL(ready.mcpUrl), { requestInit: { headers: { authorization } } }));
  const legacySdk = async () => expectShipped(JSON.stringify(await legacyClient.callTool({ name: 'search_orders', arguments: args })));
  const modernClient = new ModernClient({ name: 'bench-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await modernClient.connect(new ModernTransport(new URL(ready.mcpUrl), { requestInit: { headers: { authorization } } }));
  const modernSdk = async () => expectShipped(JSON.stringify(await modernClient.callTool({ name: 'search_orders', arguments: args })));

  const targets = [
    { name: 'direct (undici)', call: direct, viaGateway: false },
    { name: '2026-07-28 raw (undici)', call: modernRaw, viaGateway: true },
    { name: '2025-11-25 raw (undici, SSE)', call: legacyRaw, viaGateway: true },
    { name: '2026-07-28 SDK v2 client', call: modernSdk, viaGateway: true },
    { name: '2025-11-25 SDK 1.x client', call: legacySdk, viaGateway: true },
  ];
  console.error(`${CALLS} calls at c=1 per target, in ${ROUNDS} rounds…`);
  const rows = await sequential(targets, child.pid);
  const throughput = {};
  for (const { name, call } of C16_MS > 0 ? [targets[0], targets[1], targets[2], targets[4]] : []) {
    console.error(`${name}: c=16 for ${C16_MS} ms…`);
    throughput[name] = await concurrent(call);
  }
  await legacyClient.close();
  await modernClient.close();
  await agent.close();

  const directP50 = rows[0].p50;
  const table = [['target', 'p50 ms', 'p99 ms', 'added p50 ms', 'gateway CPU ms/call', 'c=16 calls/s (vs direct)']];
  for (const row of rows) {
    const perSecond = throughput[row.name];
    table.push([
      row.name,
      row.p50.toFixed(3),
      row.p99.toFixed(3),
      row.name.startsWith('direct') ? '' : `+${(row.p50 - directP50).toFixed(3)}`,
      row.cpuMs === undefined ? '' : row.cpuMs.toFixed(3),
      perSecond === undefined ? '' : `${Math.round(perSecond)} (${Math.round((perSecond / throughput['direct (undici)']) * 100)} %)`,
    ]);
  }
  const widths = table[0].map((_, column) => Math.max(...table.map((row) => row[column].length)));
  console.log(table.map((row) => row.map((cell, column) => cell.padEnd(widths[column])).join('  ')).join('\n'));
} finally {
  // A clean stop (not a kill), so a CPU profile is written.
  if (child?.connected) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.removeAllListeners('exit');
    child.send({ type: 'stop' });
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
  }
  child?.kill();
  upstream?.kill();
}
