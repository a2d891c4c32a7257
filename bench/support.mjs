// Shared pieces of bench/peers/run.mjs and bench/memory.mjs: a workspace with a signed lock made by the real
// CLI, the example upstream in its own process, a gateway process (bench/gateway-child.mjs, or `gateway serve
// --workers N`), a real OAuth session (bench/oauth-session.mjs), raw 2026-07-28 requests, and per-process CPU
// and RSS read from /proc (so every process is measured the same way, whoever started it).
import { execFileSync, fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { obtainAccessToken } from './oauth-session.mjs';
// The one value `gateway serve` runs with (packages/runtime/src/node-flags.ts).
import { SEMI_SPACE_FLAG } from '../packages/runtime/dist/node-flags.js';

export const root = fileURLToPath(new URL('..', import.meta.url));
export const cli = join(root, 'packages', 'cli', 'dist', 'main.js');
export const API_KEY = 'bench-orders-key';
/** The webhook endpoint's signing secret (Standard Webhooks `whsec_…`), in the vault as `bench-webhook`. */
const WEBHOOK_SECRET_NAME = 'bench-webhook';
const WEBHOOK_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
/**
 * The receipt digest key, as an operator gives it to an env vault (which cannot create it): without one that
 * outlives the process the gateway turns its receipt journal off (docs/receipts.md#authenticated-journal-lines).
 */
export const RECEIPTS_KEY_ENV = { GATEWAY_SECRET_RECEIPTS_DIGEST_KEY: randomBytes(32).toString('base64url') };
export const ENV = {
  ...process.env,
  ...RECEIPTS_KEY_ENV,
  GATEWAY_SECRET_ORDERS_API_KEY: API_KEY,
  GATEWAY_SECRET_BENCH_WEBHOOK: WEBHOOK_SECRET,
  NO_COLOR: '1',
};
const PERSON = { name: 'bench', password: 'bench correct horse battery staple' };
const SESSION_SECONDS = 3600;

/** What a bench leaves behind until it ends: its temporary folders and the processes it started. */
const leftovers = { directories: new Set(), children: new Set() };

function cleanUp() {
  for (const child of leftovers.children) if (child.exitCode === null && child.signalCode === null) child.kill();
  leftovers.children.clear();
  if (!process.env.BENCH_KEEP) for (const directory of leftovers.directories) rmSync(directory, { recursive: true, force: true });
  leftovers.directories.clear();
}

let isCleanUpInstalled = false;
/** Cleans up when the bench exits, also when it is stopped with Ctrl-C or SIGTERM mid-run. */
function installCleanUp() {
  if (isCleanUpInstalled) return;
  isCleanUpInstalled = true;
  process.once('exit', cleanUp);
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ]) {
    process.once(signal, () => {
      cleanUp();
      process.exit(code);
    });
  }
}

/**
 * A new temporary folder (`<parent>/<prefix>XXXXXX`), removed when the bench ends however it ends.
 * BENCH_KEEP=1 keeps the folders (to read a gateway's log afterwards).
 */
export function benchDirectory(prefix, parent = tmpdir()) {
  installCleanUp();
  const directory = mkdtempSync(join(parent, prefix));
  leftovers.directories.add(directory);
  return directory;
}

/** A child process (spawn, fork) that is stopped when the bench ends however it ends; returns it. */
export function benchChild(child) {
  installCleanUp();
  leftovers.children.add(child);
  child.once('exit', () => leftovers.children.delete(child));
  return child;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export async function waitForHttp(url, deadlineMs = 15_000) {
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

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** CPU time (user + system, ms) and resident memory (bytes) of a process, from /proc. */
export function processStats(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces), from field 3 on.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
  return { cpuMs, rss };
}

/** The pid and every descendant's pid (a `gateway serve --workers N` primary and its workers). */
export function processTree(pid) {
  const parents = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!parents.has(ppid)) parents.set(ppid, []);
      parents.get(ppid).push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  const all = [pid];
  for (let index = 0; index < all.length; index += 1) all.push(...(parents.get(all[index]) ?? []));
  return all;
}

/** Summed CPU and RSS of a set of processes. */
export function treeStats(pids) {
  let cpuMs = 0;
  let rss = 0;
  for (const pid of pids) {
    try {
      const stats = processStats(pid);
      cpuMs += stats.cpuMs;
      rss += stats.rss;
    } catch {
      // Gone.
    }
  }
  return { cpuMs, rss };
}

/** Runs the CLI (`cliPath`: another checkout's, bench/ab.mjs) in `cwd`; `input` on its standard input. */
export function gateway(args, cwd, input, cliPath = cli) {
  execFileSync(process.execPath, [cliPath, ...args], {
    cwd,
    env: ENV,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'],
    input,
  });
}

/** The example upstream in its own process (`keepAliveMs`: its idle connections' timeout, Node's 5 s unless given). */
export async function startUpstream({ keepAliveMs } = {}) {
  const port = await freePort();
  const server = join(root, 'examples', 'orders-api', 'server.mjs');
  const keepAlive = keepAliveMs === undefined ? [] : ['--keep-alive-ms', String(keepAliveMs)];
  const child = benchChild(
    spawn(process.execPath, [server, '--port', String(port), '--api-key', API_KEY, ...keepAlive], { stdio: 'ignore' }),
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/orders`);
  return { child, url, pid: child.pid };
}

/**
 * A workspace for the example orders API with a signed lock made by the real CLI (import → review
 * --all-supported → publish) and a local account. `vault: file` when several workers must share the
 * signing keys (the env vault cannot store them). `build`: the checkout whose CLI makes the lock (bench/ab.mjs:
 * each side's own, so each gateway reads a lock its own schema knows). `postgres`: state in PostgreSQL
 * (`storage.kind: postgres`, the connection string in the vault as `database-url`: with the env vault, the
 * gateway's environment gives GATEWAY_SECRET_DATABASE_URL and GATEWAY_SECRET_RECEIPTS_SIGNING_KEY).
 */
export async function ordersWorkspace(
  upstreamUrl,
  { vault = 'env', webhookUrl, build, tracesEndpoint, metricsOff = false, postgres = false } = {},
) {
  const cliPath = build ? join(build, 'packages', 'cli', 'dist', 'main.js') : cli;
  const run = (args, cwd, input) => gateway(args, cwd, input, cliPath);
  const directory = benchDirectory('gateway-bench-orders-');
  const port = await freePort();
  const example = await readFile(join(root, 'examples', 'orders-api', 'openapi.yaml'), 'utf8');
  await writeFile(join(directory, 'openapi.yaml'), example.replace('http://127.0.0.1:4010', upstreamUrl));
  await writeFile(
    join(directory, 'gateway.yaml'),
    [
      'gateway:',
      `  url: http://127.0.0.1:${port}`,
      `  listen: 127.0.0.1:${port}`,
      'sources:',
      '  orders:',
      '    kind: openapi',
      '    document: openapi.yaml',
      '    credentials:',
      '      api_key: { type: apiKey, secret: orders-api-key }',
      'trust:',
      '  keys: [keys/publisher.pub.jwk]',
      'network:',
      '  allowPrivateNetworks: [127.0.0.1/32]',
      'vault:',
      `  provider: ${vault}`,
      'drift:',
      '  enabled: false',
      ...(postgres ? ['storage:', '  kind: postgres', '  url: database-url'] : []),
      // Events on: every receipt becomes a signed CloudEvents webhook to this receiver (startWebhookReceiver).
      ...(webhookUrl ? ['webhooks:', '  bench:', `    url: ${webhookUrl}`, `    secret: ${WEBHOOK_SECRET_NAME}`] : []),
      // Traces on: every call's spans exported over OTLP/HTTP to this collector (bench/ab.mjs --traces).
      ...(tracesEndpoint || metricsOff ? ['telemetry:'] : []),
      ...(tracesEndpoint ? ['  traces:', `    endpoint: ${tracesEndpoint}`] : []),
      ...(metricsOff ? ['  metrics:', '    enabled: false'] : []),
      'auth:',
      '  sessions:',
      `    lifetimeChoicesSeconds: [900, ${SESSION_SECONDS}]`,
      '  tokens:',
      `    accessTokenSeconds: ${SESSION_SECONDS}`,
      '',
    ].join('\n'),
  );
  run(['keys', 'generate', '--out', 'keys'], directory);
  if (vault === 'file') run(['secrets', 'set', 'orders-api-key'], directory, API_KEY);
  if (vault === 'file' && webhookUrl) run(['secrets', 'set', WEBHOOK_SECRET_NAME], directory, WEBHOOK_SECRET);
  run(['import', 'orders'], directory);
  run(['review', 'orders', '--all-supported', '--no-interactive'], directory);
  run(['publish', 'orders', '--key', 'keys/publisher.private.jwk', '--publisher', 'bench@example.com'], directory);
  run(['people', 'add', PERSON.name], directory, PERSON.password);
  return { directory, configPath: join(directory, 'gateway.yaml'), port };
}

/**
 * The Node flags of a bench's gateway process: the ones `gateway serve` runs with (its bin's shebang), then
 * `extra`, then BENCH_GATEWAY_FLAGS (extra Node/V8 flags for the gateway process only, e.g. to compare GC
 * settings: a later flag wins, so `BENCH_GATEWAY_FLAGS=--max-semi-space-size=16` measures V8's default).
 */
export function gatewayExecArgv(extra = []) {
  return [SEMI_SPACE_FLAG, ...extra, ...(process.env.BENCH_GATEWAY_FLAGS ?? '').split(' ').filter(Boolean)];
}

/** A gateway in its own process (bench/gateway-child.mjs: startGateway as `gateway serve` runs it). */
export function startGatewayChild(configPath, { execArgv = [] } = {}) {
  const log = openSync(join(configPath, '..', 'gateway.log'), 'a');
  const child = benchChild(
    fork(join(root, 'bench', 'gateway-child.mjs'), [], {
      env: { ...ENV, BENCH_CONFIG: configPath },
      stdio: ['ignore', 'inherit', log, 'ipc'],
      execArgv: gatewayExecArgv(execArgv),
    }),
  );
  closeSync(log);
  const ready = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`gateway child exited ${code}`)));
    child.on('message', (message) => {
      if (message.type === 'ready') resolve(message);
    });
  });
  return {
    child,
    pid: child.pid,
    ready,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.removeAllListeners('exit');
        child.once('exit', () => resolve());
        child.send({ type: 'stop' });
      }),
  };
}

/** `gateway serve --workers N` as an operator runs it; resolves once it prints that it is serving. */
export async function startGatewayWorkers(workspace, workers) {
  const log = openSync(join(workspace.directory, 'gateway-workers.log'), 'a');
  // As the `gateway` bin starts it (its shebang passes the flag); the primary gives it to each worker.
  const child = benchChild(
    spawn(process.execPath, [SEMI_SPACE_FLAG, cli, 'serve', '--workers', String(workers)], {
      cwd: workspace.directory,
      env: ENV,
      stdio: ['ignore', 'pipe', log],
    }),
  );
  closeSync(log);
  let output = '';
  await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      output += chunk;
      if (output.includes('serving')) resolve();
    });
    child.once('exit', (code) =>
      reject(new Error(`gateway serve --workers exited ${code}; see ${workspace.directory}/gateway-workers.log`)),
    );
  });
  child.removeAllListeners('exit');
  const url = `http://127.0.0.1:${workspace.port}`;
  return {
    child,
    pid: child.pid,
    url,
    mcpUrl: `${url}/mcp`,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** A real session for `tools`, approved over plain HTTP (DCR, sign-in, consent, token). */
export async function sessionToken({ url, mcpUrl }, tools, logins = ['orders/api_key']) {
  const { accessToken } = await obtainAccessToken({
    issuer: url,
    mcpUrl,
    person: PERSON.name,
    password: PERSON.password,
    tools,
    logins,
    lifetimeSeconds: SESSION_SECONDS,
  });
  return accessToken;
}

/** A JSON-RPC POST to /mcp with a bearer token, in one MCP revision: the two request forms below. */
function mcpPost(mcpUrl, token, protocolVersion, headers, message) {
  return {
    url: mcpUrl,
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': protocolVersion,
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...message }),
  };
}

/** A 2026-07-28 request (bench/server.mjs's form): `_meta` envelope plus the standard headers. */
export function modernRequest(mcpUrl, token, method, params, name) {
  return mcpPost(
    mcpUrl,
    token,
    '2026-07-28',
    { 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) },
    {
      method,
      params: {
        ...params,
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
      },
    },
  );
}

/**
 * The tools/call of the benches that run the allow-all authorizer (bench/ab.mjs, receipts.mjs, webhooks-e2e.mjs):
 * `get_order` as a 2026-07-28 fast-path request; that authorizer takes any token.
 */
export function allowAllOrderCall() {
  const { body, headers } = modernRequest(
    '',
    'bench',
    'tools/call',
    { name: 'get_order', arguments: { orderId: 'ord_1001' } },
    'get_order',
  );
  return { body, headers };
}

/** The same call as the 2025-11-25 requests SDK 1.x clients send (no `_meta`), for the allow-all authorizer too. */
export function allowAllLegacyOrderCall() {
  const { body, headers } = legacyRequest('', 'bench', 'tools/call', { name: 'get_order', arguments: { orderId: 'ord_1001' } });
  return { body, headers };
}

/** Throws unless a bench's `get_order` call was answered with the order (a refusal must not pass for a fast call). */
export function expectOrder(statusCode, text) {
  if (statusCode !== 200 || !text.includes('ord_1001')) throw new Error(`unexpected answer ${statusCode}: ${text}`);
}

export function percentile(sorted, fraction) {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))];
}

/**
 * A webhook receiver in its own process: acknowledges every event with 204, counts them and remembers when
 * the last one arrived. `state()` asks it over IPC.
 */
export async function startWebhookReceiver() {
  const source = `
    const { createServer } = require('node:http');
    let received = 0, lastAt = 0;
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => { received += 1; lastAt = Date.now(); response.writeHead(204).end(); });
    });
    server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
    process.on('message', () => process.send({ received, lastAt }));
  `;
  const child = benchChild(spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const port = await new Promise((resolve) => child.once('message', (message) => resolve(message.port)));
  return {
    child,
    pid: child.pid,
    url: `http://127.0.0.1:${port}/hooks`,
    state: () =>
      new Promise((resolve) => {
        child.once('message', resolve);
        child.send('state');
      }),
    stop: () => child.kill(),
  };
}

/** A 2025-11-25 request as SDK 1.x clients send it after a stateless `initialize` (no `_meta` envelope). */
export function legacyRequest(mcpUrl, token, method, params) {
  return mcpPost(mcpUrl, token, '2025-11-25', {}, { method, params });
}

/**
 * The floor of an MCP client: a server in its own process that answers `initialize`, notifications and
 * `tools/call` at once with fixed JSON (no upstream, no checks). What a client measures against it is the
 * client's own cost plus one HTTP exchange.
 */
export async function startCannedMcpServer(text) {
  const port = await freePort();
  const source = `
    const { createServer } = require('node:http');
    const answer = (id, result) => JSON.stringify({ jsonrpc: '2.0', id, result });
    createServer((request, response) => {
      const chunks = [];
      request.on('data', (chunk) => chunks.push(chunk));
      request.on('end', () => {
        if (request.method !== 'POST') return response.writeHead(405).end();
        const message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (message.id === undefined) return response.writeHead(202).end();
        const result = message.method === 'initialize'
          ? {
              protocolVersion: message.params.protocolVersion,
              capabilities: { tools: {} },
              serverInfo: { name: 'floor', version: '1.0.0' },
            }
          : { content: [{ type: 'text', text: ${JSON.stringify(JSON.stringify(text))} }] };
        response.writeHead(200, { 'content-type': 'application/json' }).end(answer(message.id, result));
      });
    }).listen(${port}, '127.0.0.1');
  `;
  const child = benchChild(spawn(process.execPath, ['-e', source], { stdio: 'ignore' }));
  const url = `http://127.0.0.1:${port}/mcp`;
  await waitForHttp(url);
  return { child, pid: child.pid, url, stop: () => child.kill() };
}

/**
 * The child side of a bench that measures the gateway's call path without OAuth (bench/receipts.mjs,
 * webhooks-e2e.mjs, mcp-source.mjs): the gateway from BENCH_CONFIG, started as `gateway serve` would with the
 * environment the parent forked it with, a silent logger, and an authorizer that lets one session call every
 * published tool as approved (`logins`: the login ids that session holds). Sends `{ mcpUrl }` to the parent and
 * closes the gateway when the parent sends any message. `build`: the checkout whose built server runs (bench/ab.mjs
 * compares two; default this one). `listen`: `host:port` instead of gateway.listen (bench/replicas.mjs: replicas
 * of one config, each on its own port).
 */
export async function serveWithAllowAllAuthorizer({ logins = [], build = root, listen } = {}) {
  const { startGateway } = await import(pathToFileURL(join(build, 'packages/server/dist/index.js')).href);
  const { pino } = await import(pathToFileURL(createRequire(join(build, 'packages/server/package.json')).resolve('pino')).href);
  const gateway = await startGateway({
    configPath: process.env.BENCH_CONFIG,
    env: process.env,
    logger: pino({ level: 'silent' }),
    ...(listen ? { listen } : {}),
    authorizerOverride: ({ registry }) => {
      const snapshot = registry.snapshot();
      // What the call decision compares: each tool's fingerprint as published.
      const tools = new Map(snapshot.names.map((name) => [name, snapshot.tools.get(name).entry.fingerprint]));
      const caller = {
        sessionId: 'session-1',
        subject: 'bench',
        clientId: 'bench',
        tools,
        logins: new Set(logins),
        expiresAt: Date.now() + 3_600_000,
      };
      // `isSessionOpen`: what builds before the three session states asked (bench/ab.mjs runs older builds).
      return { authenticate: async () => ({ ok: true, caller }), sessionState: () => 'open', isSessionOpen: () => true };
    },
  });
  if (process.env.BENCH_HEAP_PROFILE) await sampleAllocations(process.env.BENCH_HEAP_PROFILE);
  process.send({ mcpUrl: gateway.mcpUrl });
  // The bench that forked this process is gone (stopped with Ctrl-C or killed): do not outlive it.
  process.once('disconnect', () => process.exit(0));
  // Stopped by the bench's cleanup: exit normally, so a `--cpu-prof` in BENCH_GATEWAY_FLAGS writes its profile.
  process.once('SIGTERM', () => process.exit(0));
  // 'stop' (other messages are the bench's own, e.g. bench/op-counts.mjs's).
  process.on('message', async (message) => {
    if (message !== 'stop') return;
    await gateway.close();
    process.exit(0);
  });
}

/**
 * BENCH_HEAP_PROFILE=<dir>: a sampling heap profile of everything the gateway process allocates from its start to
 * the bench's end, garbage included (V8 keeps samples of objects young- and old-generation collections freed), written
 * to `<dir>/heap-<pid>.heapprofile` (Chrome DevTools opens it; `node bench/heap-summary.mjs <dir>` ranks its allocation sites).
 */
async function sampleAllocations(directory) {
  const { Session } = await import('node:inspector');
  const session = new Session();
  session.connect();
  const post = (method, parameters) =>
    new Promise((resolve, reject) => session.post(method, parameters, (error, result) => (error ? reject(error) : resolve(result))));
  await post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    // BENCH_HEAP_PROFILE_SURVIVORS=1: only objects no scavenge freed, by the site that allocated them: what lived long
    // enough to be promoted to the old generation (and cost a copy or two and a mark-compact's work), and what is alive.
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: !process.env.BENCH_HEAP_PROFILE_SURVIVORS,
  });
  // However the process ends (the bench's stop message or its SIGTERM): a session of this very thread answers
  // synchronously, so the profile is written before the process is gone.
  process.once('exit', () =>
    session.post('HeapProfiler.stopSampling', (error, result) => {
      if (!error) writeFileSync(join(directory, `heap-${process.pid}.heapprofile`), JSON.stringify(result.profile));
    }),
  );
}

/**
 * Node under valgrind's callgrind, for a bench that counts the instructions a gateway process executes (bench/ab.mjs
 * --instructions): unlike CPU time, the count does not move with what else the machine runs. Returns `fork` options
 * (`execPath`, `execArgv`) that start the module under `valgrind --tool=callgrind` with `gatewayExecArgv(extra)`,
 * instrumentation off until `callgrindCounter(pid).start()` (start-up and warm-up run about 5× slower instead of
 * 50×), and the folder of its out files. `--smc-check=all-non-file`: V8 writes and rewrites machine code in anonymous
 * memory, which valgrind must then translate again.
 */
export function callgrindFork(extra = []) {
  try {
    execFileSync('callgrind_control', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('--instructions needs valgrind (with callgrind_control) on the PATH');
  }
  const directory = benchDirectory('gateway-bench-callgrind-');
  return {
    execPath: 'valgrind',
    execArgv: [
      '--tool=callgrind',
      '--smc-check=all-non-file',
      '--instr-atstart=no',
      `--log-file=${join(directory, 'valgrind.%p.log')}`,
      `--callgrind-out-file=${join(directory, 'callgrind.%p.out')}`,
      process.execPath,
      ...gatewayExecArgv(extra),
    ],
    directory,
  };
}

/**
 * Instructions callgrind counts in the process `pid` (started with callgrindFork's options, out files in
 * `directory`), all its threads: `start()` turns instrumentation on and zeroes the count, `read()` dumps the count
 * since the last start or read and returns it, `stop()` turns instrumentation off. Each is a `callgrind_control`
 * round trip (valgrind reads the command between basic blocks). BENCH_KEEP=1 keeps the dumps, for callgrind_annotate.
 */
export function callgrindCounter(pid, directory) {
  const control = (...args) => execFileSync('callgrind_control', [...args, String(pid)], { stdio: ['ignore', 'pipe', 'ignore'] });
  let dumps = 0;
  return {
    start() {
      control('--instr=on');
      control('--zero');
    },
    read() {
      control('--dump');
      dumps += 1;
      const file = join(directory, `callgrind.${pid}.out.${dumps}`);
      const summary = /^summary:\s+(\d+)/m.exec(readFileSync(file, 'utf8'));
      if (!summary) throw new Error(`no summary line in ${file}`);
      if (!process.env.BENCH_KEEP) rmSync(file, { force: true });
      return Number(summary[1]);
    },
    stop() {
      control('--instr=off');
    },
  };
}
