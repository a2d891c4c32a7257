// The load generator, in its own process: raw JSON-RPC (or plain HTTP) over undici, so the client's cost is the
// same on the gateway path and the direct path. Input: a JSON job on argv[2]; output: JSON on stdout.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// undici is a dependency of packages/server (the same client the gateway uses upstream).
const root = fileURLToPath(new URL('..', import.meta.url));
const { Agent, request } = await import(pathToFileURL(createRequire(join(root, 'packages/server/package.json')).resolve('undici')).href);

const job = JSON.parse(process.argv[2]);
const agent = new Agent({ connections: 64, pipelining: 1, keepAliveTimeout: 30_000 });

function percentile(sorted, fraction) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))];
}

async function once(target) {
  const started = performance.now();
  const response = await request(target.url, { method: target.method, headers: target.headers, body: target.body, dispatcher: agent });
  const text = await response.body.text();
  const elapsed = performance.now() - started;
  if (response.statusCode >= 400 || (target.expect && !text.includes(target.expect))) {
    throw new Error(`unexpected answer ${response.statusCode}: ${text.slice(0, 300)}`);
  }
  return elapsed;
}

async function run({ target, concurrency, durationMs, warmupMs }) {
  const warmupEnd = performance.now() + warmupMs;
  const workers = async (until, sink) => {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < until) sink?.push(await once(target));
      }),
    );
  };
  await workers(warmupEnd);
  const latencies = [];
  const started = performance.now();
  await workers(started + durationMs, latencies);
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    calls: latencies.length,
    callsPerSecond: Math.round(latencies.length / seconds),
    p50Ms: Number(percentile(latencies, 0.5).toFixed(3)),
    p99Ms: Number(percentile(latencies, 0.99).toFixed(3)),
  };
}

const results = [];
for (const scenario of job.scenarios) results.push({ name: scenario.name, concurrency: scenario.concurrency, ...(await run(scenario)) });
process.stdout.write(JSON.stringify(results));
await agent.close();
