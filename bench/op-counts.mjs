// bench/op-counts: what one tools/call costs in operations, counted, for two builds side by side. A CPU A/B on the
// 2-core bench machine cannot tell 5 % (docs/performance.md › Process lives); a count of the expensive operations a
// call makes (digests and HMACs, JSON encodes and parses, SQLite statements, promises, timers, AbortControllers,
// pino child loggers) does not depend on the machine's load or on the process's life, so a change that does more per
// call shows here exactly.
//
//   pnpm build && node bench/op-counts.mjs --a ../base [--b .] [--calls 2000] [--warmup 1000] [--modes modern-raw,legacy-raw]
//
// Each side: its own workspace and gateway process (the allow-all authorizer of bench/support.mjs, receipts on), the
// counters installed in that process before the gateway is loaded. Per mode: warm-up calls, counters zeroed, the
// calls at concurrency 8, a pause for the work that follows an answer (the receipts' move into SQLite, log lines),
// then the counts divided by the calls. Counting wraps the functions, so it slows the calls: read counts, not times.
import { createHook } from 'node:async_hooks';
import { fork } from 'node:child_process';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  ENV,
  allowAllLegacyOrderCall,
  allowAllOrderCall,
  benchChild,
  expectOrder,
  ordersWorkspace,
  root,
  serveWithAllowAllAuthorizer,
  startUpstream,
} from './support.mjs';

if (process.argv[2] === 'child') {
  const counts = new Map();
  let counting = false;
  const tally = (name) => {
    if (counting) counts.set(name, (counts.get(name) ?? 0) + 1);
  };
  /** Replaces `owner[key]` with a function that counts its calls as `name`, then does what it did. */
  const wrap = (owner, key, name) => {
    const original = owner[key];
    owner[key] = function counted(...args) {
      tally(name);
      return new.target ? Reflect.construct(original, args, new.target) : original.apply(this, args);
    };
  };
  const require = createRequire(import.meta.url);
  const crypto = require('node:crypto');
  for (const key of [
    'createHmac',
    'createHash',
    'randomBytes',
    'randomUUID',
    'createCipheriv',
    'createDecipheriv',
    'sign',
    'timingSafeEqual',
  ])
    wrap(crypto, key, `crypto.${key}`);
  syncBuiltinESMExports();
  wrap(JSON, 'stringify', 'JSON.stringify');
  if (process.env.BENCH_STRINGIFY_SITES === '1') {
    const stringify = JSON.stringify;
    JSON.stringify = function sited(...args) {
      if (counting) {
        const frame = new Error().stack
          .split('\n')
          .slice(2)
          .find((line) => !line.includes('bench/op-counts'));
        tally(`stringify at ${frame?.replace(/.*\/(packages|node_modules)\//, '').replace(/\)$/, '')}`);
      }
      return stringify.apply(this, args);
    };
  }
  wrap(JSON, 'parse', 'JSON.parse');
  // pino loggers made from others: Fastify's per-request child, the gateway's own children.
  const pino = createRequire(resolve(process.env.BENCH_BUILD, 'packages/server/package.json'))('pino');
  // `child` is on the prototype every logger shares, a few links up each logger's chain.
  let childOwner = pino({ level: 'silent' });
  while (!Object.hasOwn(childOwner, 'child')) childOwner = Object.getPrototypeOf(childOwner);
  wrap(childOwner, 'child', 'pino.child');
  // Made by the gateway's own code (the global one; Node's and libraries' internal ones are not counted).
  const NativeAbortController = globalThis.AbortController;
  globalThis.AbortController = class CountedAbortController extends NativeAbortController {
    constructor() {
      super();
      tally('AbortController');
    }
  };
  const Database = createRequire(resolve(process.env.BENCH_BUILD, 'packages/server/package.json'))('better-sqlite3');
  const probe = new Database(':memory:');
  const Statement = probe.prepare('SELECT 1').constructor.prototype;
  probe.close();
  for (const key of ['run', 'get', 'all', 'iterate']) wrap(Statement, key, `sqlite.${key}`);
  wrap(Database.prototype, 'prepare', 'sqlite.prepare');
  wrap(Database.prototype, 'exec', 'sqlite.exec');
  const transaction = Database.prototype.transaction;
  Database.prototype.transaction = function countedTransaction(body) {
    const made = transaction.call(this, body);
    const run = (...args) => {
      tally('sqlite.transaction');
      return made(...args);
    };
    for (const mode of ['deferred', 'immediate', 'exclusive'])
      run[mode] = (...args) => {
        tally('sqlite.transaction');
        return made[mode](...args);
      };
    return run;
  };
  // BENCH_PROMISE_SITES=1: each promise also counted by the first frame of the gateway's own code that made it.
  const sites = process.env.BENCH_PROMISE_SITES === '1';
  createHook({
    init: (_id, type) => {
      tally(`async.${type}`);
      if (sites && counting && type === 'PROMISE') {
        const frame = new Error().stack.split('\n').find((line) => line.includes('/packages/') && !line.includes('/bench/'));
        tally(`promise at ${frame?.replace(/.*\/packages\//, '').replace(/\)$/, '') ?? '(outside the gateway)'}`);
      }
    },
  }).enable();

  process.on('message', (message) => {
    if (message === 'count') {
      counts.clear();
      counting = true;
    } else if (message === 'read') {
      counting = false;
      process.send({ counts: Object.fromEntries(counts) });
    }
  });
  await serveWithAllowAllAuthorizer({ logins: ['orders/api_key'], build: process.env.BENCH_BUILD });
} else {
  const { values: options } = parseArgs({
    options: {
      a: { type: 'string' },
      b: { type: 'string', default: root },
      calls: { type: 'string', default: '2000' },
      warmup: { type: 'string', default: '1000' },
      modes: { type: 'string', default: 'modern-raw,legacy-raw' },
    },
  });
  if (!options.a) throw new Error('--a <checkout> is required: the build to compare with (its packages/*/dist built)');
  const CALLS = Number(options.calls);
  const WARMUP = Number(options.warmup);
  if (!(CALLS >= 100 && CALLS <= 20_000 && WARMUP >= 0 && WARMUP <= 20_000)) throw new Error('--calls 100..20000, --warmup 0..20000');
  const MODES = options.modes.split(',').filter(Boolean);
  for (const mode of MODES) if (!['modern-raw', 'legacy-raw'].includes(mode)) throw new Error(`--modes: unknown mode ${mode}`);
  const { Agent, request } = await import(
    pathToFileURL(createRequire(resolve(root, 'packages/server/package.json')).resolve('undici')).href
  );
  const upstream = await startUpstream();
  const agent = new Agent({ connections: 8 });
  const sides = [];
  try {
    for (const [name, build] of [
      ['A', resolve(options.a)],
      ['B', resolve(options.b)],
    ]) {
      const workspace = await ordersWorkspace(upstream.url, { build });
      const child = benchChild(
        fork(fileURLToPath(import.meta.url), ['child'], {
          env: { ...ENV, BENCH_BUILD: build, BENCH_CONFIG: workspace.configPath },
          stdio: 'inherit',
        }),
      );
      const mcpUrl = await new Promise((ready) => child.once('message', (message) => ready(message.mcpUrl)));
      sides.push({ name, build, child, mcpUrl });
    }
    const requests = { 'modern-raw': allowAllOrderCall(), 'legacy-raw': allowAllLegacyOrderCall() };
    const calls = async (side, mode, count) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < count) {
            next += 1;
            const { headers, body } = requests[mode];
            const response = await request(side.mcpUrl, { method: 'POST', headers, body, dispatcher: agent });
            expectOrder(response.statusCode, await response.body.text());
          }
        }),
      );
    };
    const ask = (side, message) =>
      new Promise((answer) => {
        side.child.once('message', answer);
        side.child.send(message);
      });
    for (const mode of MODES) {
      const perCall = [];
      for (const side of sides) {
        await calls(side, mode, WARMUP);
        await new Promise((settled) => setTimeout(settled, 1_000));
        side.child.send('count');
        await calls(side, mode, CALLS);
        // The work after the answers: receipts moved into SQLite, log lines, events.
        await new Promise((settled) => setTimeout(settled, 1_000));
        const { counts } = await ask(side, 'read');
        perCall.push(counts);
      }
      console.log(`${mode}: operations per call (${CALLS} calls at concurrency 8, after ${WARMUP} warm-up calls)`);
      const names = [...new Set(perCall.flatMap((counts) => Object.keys(counts)))].sort();
      console.log(`  ${'operation'.padEnd(28)} ${'A'.padStart(8)} ${'B'.padStart(8)} ${'B−A'.padStart(8)}`);
      for (const name of names) {
        const [a, b] = perCall.map((counts) => (counts[name] ?? 0) / CALLS);
        console.log(`  ${name.padEnd(28)} ${a.toFixed(2).padStart(8)} ${b.toFixed(2).padStart(8)} ${(b - a).toFixed(2).padStart(8)}`);
      }
    }
    for (const side of sides) side.child.send('stop');
  } finally {
    await agent.close();
    upstream.child.kill();
    for (const side of sides) side.child.kill();
  }
}
