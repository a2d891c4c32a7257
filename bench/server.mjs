// bench/server: the gateway's hot path against the example upstream, with the load generator in a separate
// process sending raw JSON-RPC over undici (bench/load.mjs). Authentication is on: each gateway runs with its
// own OAuth authorization server, a person approves a session over plain HTTP (bench/oauth-session.mjs), and
// every /mcp request carries that session's access token. Measures tools/call p50/p99/calls-per-second at
// concurrency 1 and 16 through the gateway and directly to the upstream in one run; tools/list of 1,000
// tools; start-up with a 2,000-tool lock; resident memory after load. Prints a table and writes
// bench/results/server.json. Run after `pnpm build`: node bench/server.mjs
import { execFileSync, fork, spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import { obtainAccessToken } from './oauth-session.mjs';
import { benchChild, benchDirectory, gatewayExecArgv, RECEIPTS_KEY_ENV } from './support.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'packages', 'cli', 'dist', 'main.js');
const API_KEY = 'bench-orders-key';
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 4000);
const WARMUP_MS = 700;
const ENV = { ...process.env, ...RECEIPTS_KEY_ENV, GATEWAY_SECRET_ORDERS_API_KEY: API_KEY, NO_COLOR: '1' };
const PERSON = { name: 'bench', password: 'bench correct horse battery staple' };
/** The session's time limit: longer than the whole bench. */
const SESSION_SECONDS = 3600;

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

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function gateway(args, cwd, input) {
  execFileSync(process.execPath, [cli, ...args], {
    cwd,
    env: ENV,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'],
    input,
  });
}

async function waitForHttp(url, deadlineMs = 10_000) {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      await fetch(url);
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`${url} did not come up`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** A workspace with a signed lock made by the real CLI: import → review --all-supported → publish. */
async function workspace(name, documentText, { source, credentials }) {
  const directory = benchDirectory(`gateway-bench-${name}-`);
  const port = await freePort();
  await writeFile(join(directory, 'openapi.yaml'), documentText);
  await writeFile(
    join(directory, 'gateway.yaml'),
    [
      'gateway:',
      `  url: http://127.0.0.1:${port}`,
      `  listen: 127.0.0.1:${port}`,
      'sources:',
      `  ${source}:`,
      '    kind: openapi',
      '    document: openapi.yaml',
      ...(credentials ? ['    credentials:', '      api_key: { type: apiKey, secret: orders-api-key }'] : []),
      'trust:',
      '  keys: [keys/publisher.pub.jwk]',
      'network:',
      '  allowPrivateNetworks: [127.0.0.1/32]',
      'vault:',
      '  provider: env',
      'drift:',
      '  enabled: false',
      'auth:',
      '  sessions:',
      `    lifetimeChoicesSeconds: [900, ${SESSION_SECONDS}]`,
      '  tokens:',
      `    accessTokenSeconds: ${SESSION_SECONDS}`,
      '',
    ].join('\n'),
  );
  gateway(['keys', 'generate', '--out', 'keys'], directory);
  gateway(['import', source], directory);
  gateway(['review', source, '--all-supported', '--no-interactive'], directory);
  gateway(['publish', source, '--key', 'keys/publisher.private.jwk', '--publisher', 'bench@example.com'], directory);
  // A local account, added as an operator does it (the password on stdin).
  gateway(['people', 'add', PERSON.name], directory, PERSON.password);
  return { directory, configPath: join(directory, 'gateway.yaml') };
}

/** An OpenAPI document with `count` GET operations (what a large API looks like to the index). */
function bulkDocument(count, serverUrl) {
  const lines = ['openapi: 3.1.0', 'info: { title: Bulk, version: 1.0.0 }', `servers: [{ url: '${serverUrl}' }]`, 'paths:'];
  for (let index = 0; index < count; index += 1) {
    const id = String(index).padStart(4, '0');
    lines.push(
      `  /items${id}/{itemId}:`,
      '    get:',
      `      operationId: getItem${id}`,
      `      summary: Get item ${id}`,
      `      description: Returns one item of collection ${id} by its id, with its attributes and history.`,
      '      parameters:',
      '        - { name: itemId, in: path, required: true, schema: { type: string, pattern: "^[a-z0-9-]+$" } }',
      '        - { name: expand, in: query, schema: { type: array, items: { type: string, enum: [owner, history, tags] } } }',
      "      responses: { '200': { description: ok } }",
    );
  }
  return `${lines.join('\n')}\n`;
}

const children = new Set();

function startGatewayChild(configPath, env = {}) {
  const spawned = performance.now();
  // The gateway's JSON-line log (stderr, as `gateway serve` writes it) goes to a file beside the config.
  const log = openSync(join(configPath, '..', 'gateway.log'), 'a');
  const child = benchChild(
    fork(join(root, 'bench', 'gateway-child.mjs'), [], {
      env: { ...ENV, ...env, BENCH_CONFIG: configPath },
      stdio: ['ignore', 'inherit', log, 'ipc'],
      // BENCH_CPU_PROF=<dir>: write a V8 CPU profile of each gateway process (open in Chrome DevTools).
      execArgv: gatewayExecArgv(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
    }),
  );
  closeSync(log);
  children.add(child);
  child.once('exit', () => children.delete(child));
  const ready = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`gateway child exited ${code}`)));
    child.on('message', (message) => {
      if (message.type === 'ready') resolve({ ...message, processReadyMs: performance.now() - spawned });
    });
  });
  return {
    child,
    ready,
    rss: () =>
      new Promise((resolve) => {
        child.once('message', (message) => resolve(message.rss));
        child.send({ type: 'rss' });
      }),
    stop: () =>
      new Promise((resolve) => {
        child.removeAllListeners('exit');
        child.once('exit', () => {
          children.delete(child);
          resolve();
        });
        child.send({ type: 'stop' });
      }),
  };
}

function runLoad(scenarios) {
  const output = execFileSync(process.execPath, [join(root, 'bench', 'load.mjs'), JSON.stringify({ scenarios })], {
    maxBuffer: 16 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(output.toString('utf8'));
}

/**
 * Signs in and approves a session for every tool the gateway serves (and `logins`): the token the load
 * generator sends.
 */
async function sessionToken(ready, logins = []) {
  const { accessToken } = await obtainAccessToken({
    issuer: ready.url,
    mcpUrl: ready.mcpUrl,
    person: PERSON.name,
    password: PERSON.password,
    tools: ready.toolNames,
    logins,
    lifetimeSeconds: SESSION_SECONDS,
  });
  return accessToken;
}

/** A 2026-07-28 request with a bearer token: `_meta` envelope plus the standard headers the spec requires. */
function mcpTarget(mcpUrl, token, method, params, name, expect) {
  const headers = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(name ? { 'mcp-name': name } : {}),
  };
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method,
    params: {
      ...params,
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
    },
  });
  return { url: mcpUrl, method: 'POST', headers, body, expect };
}

const scratch = [];
const results = { machine: { cpus: availableParallelism(), model: cpus()[0]?.model, node: process.version }, durationMs: DURATION_MS };
let upstream;
try {
  // The example upstream, in its own process.
  const upstreamPort = await freePort();
  upstream = benchChild(
    spawn(process.execPath, [join(root, 'examples', 'orders-api', 'server.mjs'), '--port', String(upstreamPort), '--api-key', API_KEY], {
      stdio: 'ignore',
    }),
  );
  const upstreamUrl = `http://127.0.0.1:${upstreamPort}`;
  await waitForHttp(`${upstreamUrl}/orders`);

  const example = await readFile(join(root, 'examples', 'orders-api', 'openapi.yaml'), 'utf8');
  console.error('preparing signed locks with the CLI (orders, 1,000 and 2,000 tools)…');
  const orders = await workspace('orders', example.replace('http://127.0.0.1:4010', upstreamUrl), { source: 'orders', credentials: true });
  const thousand = await workspace('1000', bulkDocument(1000, upstreamUrl), { source: 'bulk' });
  const twoThousand = await workspace('2000', bulkDocument(2000, upstreamUrl), { source: 'bulk' });
  scratch.push(orders.directory, thousand.directory, twoThousand.directory);

  // tools/call through the gateway and directly, c=1 and c=16.
  const ordersGateway = startGatewayChild(orders.configPath);
  const ordersReady = await ordersGateway.ready;
  const ordersToken = await sessionToken(ordersReady, ['orders/api_key']);
  const viaGateway = mcpTarget(
    ordersReady.mcpUrl,
    ordersToken,
    'tools/call',
    { name: 'search_orders', arguments: { status: 'shipped' } },
    'search_orders',
    'ord_1002',
  );
  const direct = {
    url: `${upstreamUrl}/orders?status=shipped`,
    method: 'GET',
    headers: { 'x-api-key': API_KEY, accept: 'application/json' },
    expect: 'ord_1002',
  };
  console.error('tools/call: gateway vs direct, concurrency 1 and 16…');
  const calls = runLoad([
    { name: 'gateway', target: viaGateway, concurrency: 1, durationMs: DURATION_MS, warmupMs: WARMUP_MS },
    { name: 'direct', target: direct, concurrency: 1, durationMs: DURATION_MS, warmupMs: WARMUP_MS },
    { name: 'gateway', target: viaGateway, concurrency: 16, durationMs: DURATION_MS, warmupMs: WARMUP_MS },
    { name: 'direct', target: direct, concurrency: 16, durationMs: DURATION_MS, warmupMs: WARMUP_MS },
  ]);
  const rss = await ordersGateway.rss();
  await ordersGateway.stop();
  results.toolsCall = calls;

  // tools/list of 1,000 tools (one page of 1,000).
  const listGateway = startGatewayChild(thousand.configPath);
  const listReady = await listGateway.ready;
  const listToken = await sessionToken(listReady);
  console.error('tools/list of 1,000 tools…');
  const [list] = runLoad([
    {
      name: 'tools/list',
      target: mcpTarget(listReady.mcpUrl, listToken, 'tools/list', {}, undefined, 'get_item0999'),
      concurrency: 1,
      durationMs: DURATION_MS / 2,
      warmupMs: WARMUP_MS,
    },
  ]);
  await listGateway.stop();

  // Start-up with a 2,000-tool lock: three cold processes.
  console.error('start-up with a 2,000-tool lock…');
  const startups = [];
  for (let run = 0; run < 3; run += 1) {
    const started = startGatewayChild(twoThousand.configPath);
    startups.push(await started.ready);
    await started.stop();
  }
  const startupTools = startups[0].tools;

  const c1 = (name) => calls.find((row) => row.name === name && row.concurrency === 1);
  const c16 = (name) => calls.find((row) => row.name === name && row.concurrency === 16);
  const addedP50 = c1('gateway').p50Ms - c1('direct').p50Ms;
  const throughputRatio = c16('gateway').callsPerSecond / c16('direct').callsPerSecond;
  results.toolsList = { tools: 1000, ...list };
  results.startup = {
    tools: startupTools,
    startGatewayMs: Math.round(median(startups.map((row) => row.startupMs))),
    moduleLoadMs: Math.round(median(startups.map((row) => row.moduleLoadMs))),
    processToReadyMs: Math.round(median(startups.map((row) => row.processReadyMs))),
  };
  results.rssMb = Math.round(rss / 1024 / 1024);
  results.targets = [
    { name: 'added latency p50 at c=1', value: `${addedP50.toFixed(3)} ms`, target: '≤ 1 ms', met: addedP50 <= 1 },
    {
      name: 'throughput at c=16, gateway / direct',
      value: `${Math.round(throughputRatio * 100)} %`,
      target: '≥ 50 %',
      met: throughputRatio >= 0.5,
    },
    { name: 'tools/list of 1,000 tools p50', value: `${list.p50Ms} ms`, target: '< 5 ms', met: list.p50Ms < 5 },
    {
      name: 'start-up with a 2,000-tool lock (startGateway)',
      value: `${results.startup.startGatewayMs} ms`,
      target: '< 1000 ms',
      met: results.startup.startGatewayMs < 1000,
    },
    { name: 'resident memory after load', value: `${results.rssMb} MB`, target: '< 200 MB', met: results.rssMb < 200 },
  ];

  const table = [
    ['tools/call', 'concurrency', 'calls', 'calls/s', 'p50 ms', 'p99 ms'],
    ...calls.map((row) => [
      row.name,
      String(row.concurrency),
      String(row.calls),
      String(row.callsPerSecond),
      row.p50Ms.toFixed(3),
      row.p99Ms.toFixed(3),
    ]),
  ];
  const widths = table[0].map((_, column) => Math.max(...table.map((row) => row[column].length)));
  console.log(table.map((row) => row.map((cell, column) => cell.padEnd(widths[column])).join('  ')).join('\n'));
  console.log(`\ntools/list of 1,000 tools: p50 ${list.p50Ms} ms, p99 ${list.p99Ms} ms (${list.calls} lists)`);
  console.log(
    `start-up with ${startupTools} tools: ` +
      `startGateway ${results.startup.startGatewayMs} ms; module load ${results.startup.moduleLoadMs} ms; ` +
      `spawn → ready ${results.startup.processToReadyMs} ms`,
  );
  console.log(`RSS after load: ${results.rssMb} MB\n`);
  for (const target of results.targets)
    console.log(`${target.met ? 'met ' : 'MISS'}  ${target.name}: ${target.value} (target ${target.target})`);
  await mkdir(join(root, 'bench', 'results'), { recursive: true });
  await writeFile(join(root, 'bench', 'results', 'server.json'), `${JSON.stringify(results, null, 2)}\n`);
  console.log('\nwrote bench/results/server.json');
} finally {
  upstream?.kill();
  for (const child of children) child.kill();
  // The folders go when the process exits (benchDirectory); BENCH_KEEP=1 keeps them.
  if (process.env.BENCH_KEEP) console.error(`kept ${scratch.join(' ')}`);
}
