// Summarises V8 CPU profiles (node --cpu-prof; BENCH_CPU_PROF=<dir> for bench/peers/run.mjs and bench/server.mjs):
// the functions with the most self time, and self time grouped by package, for each .cpuprofile in <dir>.
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
}
