// bench/replicas: the gateway on PostgreSQL against SQLite in one run, then 1 against N replicas on one database.
//
//   pnpm build && node bench/replicas.mjs [--rounds 6] [--calls 2000] [--warmup 1500] [--concurrency 8] [--replicas 3]
//                                         [--no-fsync]
//
// At the defaults a run takes the better part of an hour on a busy 2-core machine (PostgreSQL made 50–150 calls/s
// there); docs/performance.md's figures used --rounds 4 --calls 1000 --warmup 1000.
//
// A throw-away PostgreSQL cluster (test-support/postgres-cluster.mjs, the tests' own) on a free loopback port,
// with PostgreSQL's durable defaults (fsync and synchronous commits on; --no-fsync turns them off, as the tests
// run it). Every gateway runs in its own process with the allow-all authorizer of bench/support.mjs (this
// measures the call path and its storage, not OAuth), receipts on, no webhooks, 2026-07-28 raw `tools/call`
// over undici from this process, against the example upstream in its own process.
//
// Part 1, storage: one gateway on SQLite and one on PostgreSQL, measured in interleaved rounds (as bench/ab.mjs):
// gateway CPU per call and PostgreSQL's CPU per call (every process of the cluster, from /proc), calls per
// second, the median of the rounds' p50, and that p50 minus the direct call's (the upstream asked without the
// gateway, in the same rounds): the p50 the gateway adds.
// Part 2, replicas: the PostgreSQL gateway alone, then N replicas of it (each its own process, data directory
// and port, one database, one canonical URL), the calls spread round-robin as a load balancer would, again in
// interleaved rounds: calls per second, p50, CPU per call of the gateways and of PostgreSQL.
// Last, the head-of-log section: receipts of all replicas commit one at a time through the receipt tree's row
// lock (docs/deployment.md), so the bench times that section's shape (BEGIN, SELECT … FOR UPDATE, INSERT,
// UPDATE, COMMIT on a scratch table) at concurrency 1 and prints the bound it puts on receipted calls per
// second, with the projection for a machine with more cores.
import { generateKeyPairSync } from 'node:crypto';
import { execFileSync, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startPostgres } from '../test-support/postgres-cluster.mjs';
import {
  ENV,
  allowAllOrderCall,
  API_KEY,
  benchChild,
  freePort,
  gatewayExecArgv,
  ordersWorkspace,
  percentile,
  processTree,
  root,
  serveWithAllowAllAuthorizer,
  startUpstream,
  treeStats,
} from './support.mjs';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

if (process.argv[2] === 'child') {
  await serveWithAllowAllAuthorizer({ logins: ['orders/api_key'], listen: process.env.BENCH_LISTEN });
} else {
  await main();
}

function options() {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '6' },
      calls: { type: 'string', default: '2000' },
      warmup: { type: 'string', default: '1500' },
      concurrency: { type: 'string', default: '8' },
      replicas: { type: 'string', default: '3' },
      'no-fsync': { type: 'boolean', default: false },
    },
  });
  const chosen = {
    rounds: Number(values.rounds),
    calls: Number(values.calls),
    warmup: Number(values.warmup),
    concurrency: Number(values.concurrency),
    replicas: Number(values.replicas),
    durable: !values['no-fsync'],
  };
  const { rounds, calls, warmup, concurrency, replicas } = chosen;
  if (!(rounds >= 1 && rounds <= 50 && calls >= 10 && calls <= 20_000 && concurrency >= 1 && concurrency <= 64))
    throw new Error('--rounds 1..50, --calls 10..20000, --concurrency 1..64');
  if (!(warmup >= 0 && warmup <= 20_000 && replicas >= 2 && replicas <= 8)) throw new Error('--warmup 0..20000, --replicas 2..8');
  return chosen;
}

async function main() {
  const settings = options();
  const { Agent, request } = await import(
    pathToFileURL(createRequire(resolve(root, 'packages/server/package.json')).resolve('undici')).href
  );
  const pg = (await import(pathToFileURL(createRequire(resolve(root, 'packages/server/package.json')).resolve('pg')).href)).default;
  const cleanups = [];
  try {
    const upstream = await startUpstream();
    cleanups.push(() => upstream.child.kill());
    const postgres = await startPostgres({ durable: settings.durable });
    cleanups.push(() => postgres.stop());
    const databaseUrl = await postgres.createDatabase();
    // The env vault of every gateway (and of the CLI that makes the PostgreSQL workspace): the connection string,
    // and the receipt signing key every replica signs the one log's checkpoints with.
    ENV.GATEWAY_SECRET_DATABASE_URL = databaseUrl;
    ENV.GATEWAY_SECRET_RECEIPTS_SIGNING_KEY = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' });
    const postmaster = Number(readFileSync(join(postgres.folder, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    // The server's processes now, plus the backends that have exited (a pool closes idle connections): the
    // postmaster reaps them, and /proc counts their CPU in its children's time.
    const databaseCpuMs = () => treeStats(processTree(postmaster)).cpuMs + reapedChildrenCpuMs(postmaster);

    const agent = new Agent({ connections: settings.concurrency, keepAliveTimeout: 30_000 });
    cleanups.push(() => agent.close());
    const load = loadGenerator({ request, agent, concurrency: settings.concurrency });

    const sqlite = await startReplica(await ordersWorkspace(upstream.url), undefined, cleanups);
    const postgresWorkspace = await ordersWorkspace(upstream.url, { postgres: true });
    const first = await startReplica(postgresWorkspace, undefined, cleanups);
    console.log(
      `PostgreSQL ${settings.durable ? 'with fsync and synchronous commits on (its defaults)' : 'without fsync (--no-fsync)'}; ` +
        `${settings.rounds} interleaved rounds of ${settings.calls} tools/call at concurrency ${settings.concurrency}, receipts on; ` +
        `${availableParallelism()} cores, shared`,
    );
    const direct = () => load.direct(`${upstream.url}/orders/ord_1001`);
    const [, onPostgres] = await measure('storage: one gateway each', settings, load, direct, databaseCpuMs, [
      { name: 'SQLite', replicas: [sqlite] },
      { name: 'PostgreSQL', replicas: [first] },
    ]);
    sqlite.stop();

    const more = [first];
    for (let index = 1; index < settings.replicas; index += 1) more.push(await startReplica(postgresWorkspace, await freePort(), cleanups));
    await measure(`replicas on one PostgreSQL database`, settings, load, direct, databaseCpuMs, [
      { name: '1 replica', replicas: [first] },
      { name: `${settings.replicas} replicas`, replicas: more },
    ]);
    for (const replica of more) replica.stop();
    const ceiling = await headOfLog(pg, postgres, settings);
    project(onPostgres, ceiling);
  } finally {
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  }
}

/**
 * A gateway process on `workspace`'s config: the first replica on the config itself, another (`port` given) on a
 * copy with a data directory of its own, listening on `port` (another host behind the same canonical URL).
 */
async function startReplica(workspace, port, cleanups) {
  let configPath = workspace.configPath;
  if (port) {
    configPath = join(workspace.directory, `gateway-${port}.yaml`);
    const config = await readFile(workspace.configPath, 'utf8');
    await writeFile(configPath, config.replace('gateway:\n', `gateway:\n  dataDirectory: .gateway-${port}\n`));
  }
  const child = benchChild(
    fork(fileURLToPath(import.meta.url), ['child'], {
      env: { ...ENV, BENCH_CONFIG: configPath, ...(port ? { BENCH_LISTEN: `127.0.0.1:${port}` } : {}) },
      stdio: 'inherit',
      execArgv: gatewayExecArgv(),
    }),
  );
  const stop = () => child.connected && child.send('stop');
  cleanups.push(() => child.kill());
  const started = await new Promise((ready, failed) => {
    child.once('message', (message) => ready(message.mcpUrl));
    child.once('exit', (code) => failed(new Error(`gateway replica exited ${code} before it served`)));
  });
  child.removeAllListeners('exit');
  return { child, mcpUrl: port ? `http://127.0.0.1:${port}/mcp` : started, stop };
}

/** Bursts of calls at a fixed concurrency over one keep-alive pool; a call that does not find the order throws. */
function loadGenerator({ request, agent, concurrency }) {
  const expectOrder = (statusCode, text) => {
    if (statusCode !== 200 || !text.includes('ord_1001')) throw new Error(`unexpected answer ${statusCode}: ${text.slice(0, 300)}`);
  };
  const call = allowAllOrderCall();
  return {
    /** One tools/call to `mcpUrl`. */
    tool: async (mcpUrl) => {
      const response = await request(mcpUrl, { method: 'POST', headers: call.headers, body: call.body, dispatcher: agent });
      expectOrder(response.statusCode, await response.body.text());
    },
    /** The upstream asked directly. */
    direct: async (url) => {
      const response = await request(url, { headers: { 'x-api-key': API_KEY }, dispatcher: agent });
      expectOrder(response.statusCode, await response.body.text());
    },
    /** `count` calls of `once(index)` at the concurrency: the sorted latencies (ms). */
    burst: async (once, count) => {
      const latencies = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < count) {
            const index = next;
            next += 1;
            const begun = performance.now();
            await once(index);
            latencies.push(performance.now() - begun);
          }
        }),
      );
      return latencies.sort((left, right) => left - right);
    },
  };
}

function median(values) {
  return percentile(
    [...values].sort((left, right) => left - right),
    0.5,
  );
}

/**
 * Interleaved rounds of `sides` (each a set of replicas the calls go to round-robin, as a load balancer sends
 * them); prints per side the gateways' and PostgreSQL's CPU per call, calls per second, p50 and added p50.
 */
async function measure(title, { rounds, calls, warmup }, load, direct, databaseCpuMs, sides) {
  const callOf = (side) => (index) => load.tool(side.replicas[index % side.replicas.length].mcpUrl);
  const gatewaysCpuMs = (side) => treeStats(side.replicas.map((replica) => replica.child.pid)).cpuMs;
  const figures = sides.map(() => ({ gatewayMs: 0, databaseMs: 0, calls: 0, seconds: 0, p50s: [] }));
  const directP50s = [];
  await load.burst(direct, warmup);
  for (const side of sides) await load.burst(callOf(side), warmup);
  // What the processes spend with no call at all (timers, polls, the change feed), so a per-call figure at a low
  // rate can be read against it.
  const idle = await idleCpu(
    sides.map((side) => () => gatewaysCpuMs(side)),
    databaseCpuMs,
  );
  for (let round = 0; round < rounds; round += 1) {
    directP50s.push(percentile(await load.burst(direct, calls), 0.5));
    // Alternate which side goes first, so neither always runs on a machine just warmed (or slowed) by the other.
    const order = round % 2 === 0 ? [...sides.keys()] : [...sides.keys()].reverse();
    for (const index of order) {
      const figure = figures[index];
      const [gatewayBefore, databaseBefore] = [gatewaysCpuMs(sides[index]), databaseCpuMs()];
      const started = performance.now();
      const latencies = await load.burst(callOf(sides[index]), calls);
      figure.seconds += (performance.now() - started) / 1000;
      figure.gatewayMs += gatewaysCpuMs(sides[index]) - gatewayBefore;
      figure.databaseMs += databaseCpuMs() - databaseBefore;
      figure.calls += calls;
      figure.p50s.push(percentile(latencies, 0.5));
    }
  }
  const directP50 = median(directP50s);
  console.log(`${title} (direct call p50 ${directP50.toFixed(3)} ms)`);
  console.log(
    `  idle, CPU ms per second: gateways ${sides.map((side, index) => `${side.name} ${idle.sides[index].toFixed(1)}`).join(', ')}, ` +
      `the PostgreSQL server ${idle.database.toFixed(1)}`,
  );
  const perCall = (ms, figure) => ((ms / figure.calls) * 1000).toFixed(0);
  for (const [index, side] of sides.entries()) {
    const figure = figures[index];
    figure.rate = figure.calls / figure.seconds;
    console.log(
      `  ${side.name}: gateway CPU ${perCall(figure.gatewayMs, figure)} µs/call, ` +
        `PostgreSQL CPU ${perCall(figure.databaseMs, figure)} µs/call, ` +
        `${Math.round(figure.rate)} calls/s, p50 ${median(figure.p50s).toFixed(3)} ms (median of rounds), ` +
        `added p50 ${(median(figure.p50s) - directP50).toFixed(3)} ms`,
    );
  }
  const [a, b] = figures;
  const cpuPerCall = (figure) => (figure.gatewayMs + figure.databaseMs) / figure.calls;
  console.log(
    `  ${sides[1].name}/${sides[0].name}: throughput ${(b.rate / a.rate).toFixed(3)}, ` +
      `CPU per call (gateways + PostgreSQL) ${(cpuPerCall(b) / cpuPerCall(a)).toFixed(3)}`,
  );
  return figures;
}

/**
 * The section every receipted call passes through one at a time across replicas: a transaction that locks one
 * row, inserts, updates it and commits (the receipt append's shape), timed at concurrency 1 on a scratch table of
 * its own database. Prints the ceiling it puts on receipted calls per second, whatever the number of replicas.
 */
async function headOfLog(pg, postgres, { calls }) {
  const client = new pg.Client({ connectionString: await postgres.createDatabase() });
  await client.connect();
  try {
    await client.query('CREATE TABLE head (id int PRIMARY KEY, size bigint NOT NULL)');
    await client.query('CREATE TABLE leaves (leaf bigint PRIMARY KEY, body text NOT NULL)');
    await client.query('INSERT INTO head VALUES (1, 0)');
    const body = 'x'.repeat(1200);
    const once = async () => {
      await client.query('BEGIN');
      const { rows } = await client.query('SELECT size FROM head WHERE id = 1 FOR UPDATE');
      const size = Number(rows[0].size);
      await client.query('INSERT INTO leaves VALUES ($1, $2)', [size, body]);
      await client.query('UPDATE head SET size = $1 WHERE id = 1', [size + 1]);
      await client.query('COMMIT');
    };
    const times = [];
    for (let index = 0; index < Math.min(calls, 2000); index += 1) {
      const begun = performance.now();
      await once();
      times.push(performance.now() - begun);
    }
    times.sort((left, right) => left - right);
    const p50 = percentile(times, 0.5);
    const ceiling = 1000 / p50;
    console.log(
      `head of the receipt log: lock, insert, update, commit at concurrency 1: p50 ${p50.toFixed(3)} ms, ` +
        `p99 ${percentile(times, 0.99).toFixed(3)} ms: at most about ${Math.round(ceiling)} receipted calls/s ` +
        'through one database, whatever the number of replicas',
    );
    return ceiling;
  } finally {
    await client.end();
  }
}

/**
 * What the figures project for a machine with more cores: CPU per call (the gateway's plus PostgreSQL's, as
 * measured in part 1) divides the cores, until the head of the receipt log's one-at-a-time section caps it.
 */
function project(figure, ceiling) {
  const microseconds = ((figure.gatewayMs + figure.databaseMs) / figure.calls) * 1000;
  const rows = [4, 8, 16, 32].map((cores) => {
    const byCpu = (cores * 1_000_000) / microseconds;
    return `${cores} cores: ${Math.round(Math.min(byCpu, ceiling))}${byCpu > ceiling ? ' (the log head caps it)' : ''}`;
  });
  console.log(
    `projection, gateways and PostgreSQL on one machine at ${microseconds.toFixed(0)} µs of CPU per call, ` +
      `the load balancer and clients elsewhere: calls/s at most ${rows.join(', ')}`,
  );
}

/** CPU milliseconds per second of each side's gateways and of PostgreSQL over 3 s without calls. */
async function idleCpu(sideReadings, databaseCpuMs) {
  const read = () => ({ sides: sideReadings.map((reading) => reading()), database: databaseCpuMs() });
  const seconds = 3;
  const before = read();
  await new Promise((wake) => setTimeout(wake, seconds * 1000));
  const after = read();
  return {
    sides: after.sides.map((value, index) => (value - before.sides[index]) / seconds),
    database: (after.database - before.database) / seconds,
  };
}

/** CPU time (ms) of the children `pid` has waited for (cutime + cstime of /proc/<pid>/stat). */
function reapedChildrenCpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / TICKS_PER_SECOND;
}
