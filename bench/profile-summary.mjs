// Summarises V8 CPU profiles (node --cpu-prof; BENCH_CPU_PROF=<dir> for bench/peers/run.mjs and bench/server.mjs;
// BENCH_GATEWAY_FLAGS="--cpu-prof --cpu-prof-dir=<dir>" for both gateways of bench/ab.mjs, one file per thread and pid):
// the functions with the most self time, self time grouped by package, and time by stage of a tool call (each
// sample given to one stage, see STAGES), for each .cpuprofile in <dir>.
//
//   node bench/profile-summary.mjs <dir> [--top 25]
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' } } });
const directory = positionals[0];
if (!directory) throw new Error('usage: node bench/profile-summary.mjs <dir> [--top N]');

/** Where a frame's code lives: a package name, the gateway's own package, node internals, or V8. */
function area(url) {
  if (!url) return '(native/V8)';
  const store =
    /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url) ?? /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (store) return store[1];
  const own = /packages\/([^/]+)\/dist\/(.*)$/.exec(url);
  if (own) return `@gateway/${own[1]}`;
  if (url.startsWith('node:')) return 'node internals';
  return url;
}

/**
 * The stages of a tool call, in priority order: a sample counts for the first stage of this list that any
 * frame on its stack belongs to (the upstream request runs inside /mcp's handler, so it is listed first; the
 * outbox's rows are written inside the receipts' move). Names and files are those of the built gateway
 * (packages/<name>/dist).
 */
const STAGES = [
  ['log line (pino, after the answer)', (frame) => frame.url.includes('/pino/') || frame.url.includes('/sonic-boom/')],
  ['webhook: acknowledgement commit', (frame) => frame.functionName === 'markDelivered'],
  ['webhook: signed POST to the receiver', (frame) => /outbox\/(dispatcher|delivery|attempt|worker)\.js/.test(frame.url)],
  ['outbox: event rows (CloudEvent, insert)', (frame) => frame.url.includes('outbox/')],
  [
    'receipt: move into the database (after the answer)',
    // Older builds moved in receipts/log.js's move* functions; since the storage ports, the journal mover and
    // the store's unit of work do it.
    (frame) =>
      (frame.url.includes('receipts/log.js') && /^move/.test(frame.functionName)) ||
      /receipts\/(journal-mover|writer)\.js|store\/sqlite\/unit-of-work\.js|receipts\/sqlite\//.test(frame.url),
  ],
  [
    'receipt: digests and journal line (on the call path)',
    (frame) =>
      frame.url.includes('receipts/') ||
      (frame.url.includes('calls/pipeline.js') && frame.functionName === 'receipt') ||
      frame.url.includes('calls/receipting.js'),
  ],
  ['upstream request (build, send)', (frame) => frame.url.includes('execute/') || frame.url.includes('runtime/dist/network')],
  ['/mcp: authenticate, decide, answer', (frame) => /\/dist\/(mcp|authorization|calls)\//.test(frame.url)],
  ['HTTP client: responses read (undici)', (frame) => frame.url.includes('/undici/')],
  ['HTTP server: requests read (node:http, fastify)', (frame) => /node:_http_|\/fastify\/|\/find-my-way\//.test(frame.url)],
  ['garbage collector', (frame) => frame.functionName === '(garbage collector)'],
  ['idle', (frame) => frame.functionName === '(idle)'],
];

function stageOf(byId, parents, id) {
  const frames = [];
  for (let current = id; current !== undefined; current = parents.get(current)) frames.push(byId.get(current).callFrame);
  const stage = STAGES.find(([, matches]) => frames.some(matches));
  return stage ? stage[0] : 'other (module loading, timers, sockets under no stage)';
}

for (const file of (await readdir(directory)).filter((name) => name.endsWith('.cpuprofile'))) {
  const profile = JSON.parse(await readFile(join(directory, file), 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMicros = new Map();
  // timeDeltas[i] is the time before sample i; attribute it to that sample's node.
  for (const [index, id] of profile.samples.entries()) selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  const total = [...selfMicros.values()].reduce((sum, value) => sum + value, 0);
  const functions = new Map();
  const areas = new Map();
  for (const [id, micros] of selfMicros) {
    const { callFrame } = byId.get(id);
    const where = callFrame.url
      ? `${callFrame.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*\/packages\//, 'packages/')}:${callFrame.lineNumber + 1}`
      : '';
    const key = `${callFrame.functionName || '(anonymous)'} ${where}`.trim();
    functions.set(key, (functions.get(key) ?? 0) + micros);
    const group = area(callFrame.url);
    areas.set(group, (areas.get(group) ?? 0) + micros);
  }
  const percent = (micros) => `${((micros / total) * 100).toFixed(1).padStart(5)} %`;
  console.log(`\n${file}: ${(total / 1000).toFixed(0)} ms sampled`);
  console.log('top self time:');
  for (const [key, micros] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top)))
    console.log(`  ${percent(micros)}  ${key}`);
  console.log('self time by area:');
  for (const [key, micros] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${percent(micros)}  ${key}`);
  const parents = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const stages = new Map();
  for (const [id, micros] of selfMicros) {
    const stage = stageOf(byId, parents, id);
    stages.set(stage, (stages.get(stage) ?? 0) + micros);
  }
  console.log('time by stage of a tool call (the first stage of STAGES on the stack):');
  for (const [key, micros] of [...stages].sort((a, b) => b[1] - a[1])) console.log(`  ${percent(micros)}  ${key}`);
}
