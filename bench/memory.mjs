// bench/memory: resident memory of the gateway over many tool calls, printed as a curve so growth shows, and
// checked against the memory target (docs/server.md, "Memory").
//
//   pnpm bench:memory                               (builds, then 30,000 calls of the 2026-07-28 era)
//   node bench/memory.mjs --era 2025 --calls 30000 --every 5000 --concurrency 8
//
// The gateway runs in its own process (bench/gateway-child.mjs, as `gateway serve`: with the Node flags of the
// `gateway` bin, bench/support.mjs) over the example upstream, with a real OAuth session. --era 2025: the MCP
// SDK 1.x client over Streamable HTTP (2025-11-25, what most deployed clients negotiate); --era 2026: raw
// 2026-07-28 requests (undici). Every `--every` calls it prints RSS, V8 heap size and used, and external memory
// of the gateway process, after a full garbage collection, and at the end the gateway's CPU time per call.
//
// The closing line says whether the target is met or MISSED:
// - below: RSS after the last call is below TARGET_RSS_MB;
// - flat: RSS after the last call is at most FLAT_TOLERANCE_MB above RSS at the first sample from WARM_UP_CALLS
//   on (V8's code and the allocator's pools fill during the first thousands of calls: growth before that is
//   warm-up, growth after it is what a long-running gateway would keep adding), and heap used likewise within
//   FLAT_TOLERANCE_MB. The tolerance is the sample noise measured on a shared 2-core machine (RSS of
//   consecutive samples differs by up to ~10 MB with no trend); a leak of even 1 KB per call adds 25 MB over
//   25,000 calls and fails it. Runs shorter than 2 × WARM_UP_CALLS are too short to judge flatness.
import { setMaxListeners } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { modernRequest, ordersWorkspace, processStats, root, sessionToken, startGatewayChild, startUpstream } from './support.mjs';

// The SDK 1.x client's transport (--era 2025) adds an abort listener per request to one long-lived signal and
// never removes it: without this, ~10,000 "possible EventTarget memory leak" warnings of this bench process (not
// the gateway's) bury the curve. bench/peers does the same.
setMaxListeners(0);

const TARGET_RSS_MB = 150;
const WARM_UP_CALLS = 5_000;
const FLAT_TOLERANCE_MB = 10;

const { values: options } = parseArgs({
  options: {
    era: { type: 'string', default: '2026' },
    calls: { type: 'string', default: '30000' },
    every: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '8' },
    // --no-gc: sample without forcing a collection first (what an operator's RSS graph shows).
    gc: { type: 'boolean', default: true },
  },
  allowNegative: true,
});
const CALLS = Number(options.calls);
const EVERY = Number(options.every);
const CONCURRENCY = Number(options.concurrency);
if (!['2025', '2026'].includes(options.era)) throw new Error('--era must be 2025 or 2026');
if (!(CALLS > 0 && CALLS <= 100_000) || !(EVERY > 0) || !(CONCURRENCY > 0))
  throw new Error('--calls 1..100000, --every > 0, --concurrency > 0');

const serverRequire = createRequire(join(root, 'packages/server/package.json'));
const { Agent, request } = await import(pathToFileURL(serverRequire.resolve('undici')).href);
const rootRequire = createRequire(join(root, 'package.json'));
const { Client } = await import(pathToFileURL(rootRequire.resolve('@modelcontextprotocol/sdk/client/index.js')).href);
const { StreamableHTTPClientTransport } = await import(
  pathToFileURL(rootRequire.resolve('@modelcontextprotocol/sdk/client/streamableHttp.js')).href
);

const mb = (bytes) => (bytes / 1024 / 1024).toFixed(1);
const cleanups = [];
const agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
try {
  const upstream = await startUpstream();
  cleanups.push(() => upstream.child.kill());
  const workspace = await ordersWorkspace(upstream.url);
  const gateway = startGatewayChild(workspace.configPath, { execArgv: ['--expose-gc'] });
  cleanups.push(() => gateway.stop());
  const ready = await gateway.ready;
  const token = await sessionToken(ready, ['get_order']);
  const memory = () =>
    new Promise((resolve) => {
      gateway.child.once('message', (message) => resolve(message.memory));
      gateway.child.send({ type: 'rss', gc: options.gc });
    });

  let call;
  let close = async () => undefined;
  if (options.era === '2025') {
    const client = new Client({ name: 'gateway-bench-memory', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(ready.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    call = async () => {
      const result = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } });
      if (result.isError) throw new Error(JSON.stringify(result.content).slice(0, 300));
    };
    close = () => client.close();
  } else {
    const target = modernRequest(ready.mcpUrl, token, 'tools/call', { name: 'get_order', arguments: { orderId: 'ord_1001' } }, 'get_order');
    call = async () => {
      const response = await request(target.url, { method: 'POST', headers: target.headers, body: target.body, dispatcher: agent });
      const text = await response.body.text();
      if (response.statusCode !== 200 || !text.includes('Ada Lovelace'))
        throw new Error(`unexpected answer ${response.statusCode}: ${text.slice(0, 300)}`);
    };
  }

  const curve = [];
  const sample = async (calls) => {
    const usage = await memory();
    curve.push({
      calls,
      rssMb: Number(mb(usage.rss)),
      heapTotalMb: Number(mb(usage.heapTotal)),
      heapUsedMb: Number(mb(usage.heapUsed)),
      externalMb: Number(mb(usage.external)),
    });
    console.log(
      `${String(calls).padStart(7)} calls  RSS ${mb(usage.rss).padStart(6)} MB  ` +
        `V8 heap ${mb(usage.heapTotal).padStart(6)} MB (used ${mb(usage.heapUsed).padStart(6)} MB)  ` +
        `external ${mb(usage.external).padStart(5)} MB`,
    );
  };
  console.log(`era ${options.era}, ${CALLS} calls at concurrency ${CONCURRENCY}, gateway pid ${gateway.pid}`);
  await sample(0);
  const cpuBefore = processStats(gateway.pid).cpuMs;
  const started = performance.now();
  let done = 0;
  while (done < CALLS) {
    const batch = Math.min(EVERY, CALLS - done);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < batch) {
          next += 1;
          await call();
        }
      }),
    );
    done += batch;
    await sample(done);
  }
  const seconds = (performance.now() - started) / 1000;
  // The gateway's CPU over the calls (with the collections the samples asked for), per call.
  const cpuMsPerCall = (processStats(gateway.pid).cpuMs - cpuBefore) / CALLS;
  await close();
  const verdict = judge(curve);
  console.log(
    `\n${CALLS} calls in ${seconds.toFixed(1)} s; gateway CPU ${cpuMsPerCall.toFixed(3)} ms per call.\n` +
      `${verdict.line}\n${verdict.met ? 'target met' : 'target MISSED'}: RSS below ${TARGET_RSS_MB} MB after ${CALLS} calls ` +
      `and flat after ${WARM_UP_CALLS} calls (within ${FLAT_TOLERANCE_MB} MB).`,
  );
  await mkdir(join(root, 'bench', 'results'), { recursive: true });
  await writeFile(
    join(root, 'bench', 'results', `memory-${options.era}.json`),
    `${JSON.stringify({ era: options.era, calls: CALLS, concurrency: CONCURRENCY, cpuMsPerCall, target: verdict, curve }, null, 2)}\n`,
  );
} finally {
  for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  await agent.close();
}

/** The target of the header comment, judged on the curve: { met, below, flat, line } (flat is null when too short). */
function judge(curve) {
  const last = curve.at(-1);
  const below = last.rssMb < TARGET_RSS_MB;
  const warm = curve.find((point) => point.calls >= WARM_UP_CALLS);
  if (!warm || last.calls < 2 * WARM_UP_CALLS) {
    return {
      met: false,
      below,
      flat: null,
      line:
        `RSS ${last.rssMb} MB after ${last.calls} calls (${below ? 'below' : 'NOT below'} ${TARGET_RSS_MB} MB); ` +
        `flatness not judged: run at least ${2 * WARM_UP_CALLS} calls with --every at most ${WARM_UP_CALLS}.`,
    };
  }
  const rssGrowth = last.rssMb - warm.rssMb;
  const heapGrowth = last.heapUsedMb - warm.heapUsedMb;
  const flat = rssGrowth <= FLAT_TOLERANCE_MB && heapGrowth <= FLAT_TOLERANCE_MB;
  const signed = (value) => `${value >= 0 ? '+' : ''}${value.toFixed(1)}`;
  return {
    met: below && flat,
    below,
    flat,
    rssGrowthMb: Number(rssGrowth.toFixed(1)),
    heapUsedGrowthMb: Number(heapGrowth.toFixed(1)),
    line:
      `RSS ${last.rssMb} MB after ${last.calls} calls (${below ? 'below' : 'NOT below'} ${TARGET_RSS_MB} MB); ` +
      `since ${warm.calls} calls RSS ${signed(rssGrowth)} MB, heap used ${signed(heapGrowth)} MB (${flat ? 'flat' : 'NOT flat'}).`,
  };
}
