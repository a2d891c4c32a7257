// Ranks the allocation sites of sampling heap profiles (BENCH_HEAP_PROFILE=<dir> for the gateways of bench/ab.mjs,
// which keep the samples of collected objects): per profile in <dir>, the total sampled bytes and the sites
// (function, file:line) that allocated the most, so two builds' profiles of the same run can be compared side by
// side. Sizes are V8's sample estimates (one sample per `samplingInterval` bytes on average).
//
//   BENCH_HEAP_PROFILE=<dir> node bench/ab.mjs --a ../base --modes modern-raw && node bench/heap-summary.mjs <dir> [--top 30]
//
// With BENCH_HEAP_PROFILE_SURVIVORS=1 the profiles keep only objects no scavenge freed: what lived long enough to be
// copied and promoted to the old generation (the garbage collector's dear part), by the site that allocated it.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' } } });
const directory = positionals[0];
if (!directory) throw new Error('usage: node bench/heap-summary.mjs <dir> [--top N]');

/** A frame's site: its function and where it is, shortened to the package or the gateway's own file. */
function site({ functionName, url, lineNumber }) {
  const short = url
    .replace(/^.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, '')
    .replace(/^.*\/packages\/([^/]+)\/dist\//, '@gateway/$1/')
    .replace(/^file:\/\//, '');
  return `${functionName || '(anonymous)'} ${short ? `${short}:${lineNumber + 1}` : '(native)'}`;
}

for (const file of (await readdir(directory)).filter((name) => name.endsWith('.heapprofile')).sort()) {
  const { head } = JSON.parse(await readFile(join(directory, file), 'utf8'));
  const bySite = new Map();
  let total = 0;
  const visit = (node) => {
    if (node.selfSize > 0) {
      const key = site(node.callFrame);
      bySite.set(key, (bySite.get(key) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const child of node.children) visit(child);
  };
  visit(head);
  console.log(`${file}: ${(total / 1048576).toFixed(1)} MB sampled`);
  for (const [key, bytes] of [...bySite].sort((left, right) => right[1] - left[1]).slice(0, Number(values.top)))
    console.log(`  ${(bytes / 1048576).toFixed(2).padStart(8)} MB  ${key}`);
}
