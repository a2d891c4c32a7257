// bench/import: how long the OpenAPI importer takes on the largest corpus document, beside the time
// @readme/openapi-parser alone takes to dereference it, and a 1,000-operation description.
// Run after `pnpm build`: node bench/import.mjs   (writes bench/results/import.json)
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const corpus = join(root, '..', 'shared', 'corpus');
const documentName = 'oas30-github-enterprise-3.17.json';
const documentPath = join(corpus, documentName);
const RUNS = 5;
const BUDGET_MS = 60_000;

const { importOpenApi, importOpenApiText } = await import(pathToFileURL(join(root, 'packages/core/dist/index.js')).href);
const requireFromCore = createRequire(join(root, 'packages/core/package.json'));
const parser = await import(pathToFileURL(requireFromCore.resolve('@readme/openapi-parser')).href);
const dereference = parser.dereference ?? parser.default?.dereference;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Runs `task` up to RUNS times (fewer if the time budget runs out) after one warm-up; returns the median in ms. */
async function measure(label, task) {
  const started = performance.now();
  await task();
  const times = [];
  for (let run = 0; run < RUNS && performance.now() - started < BUDGET_MS; run += 1) {
    const start = performance.now();
    await task();
    times.push(performance.now() - start);
  }
  const result = { label, runs: times.length, medianMs: Math.round(median(times)), timesMs: times.map(Math.round) };
  console.error(`${label}: ${result.medianMs} ms (median of ${result.runs})`);
  return result;
}

/** A copy of the document with operations added (copies of existing paths under /bench-copy) to reach `count`. */
function withOperationCount(document, count) {
  const copy = structuredClone(document);
  const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
  const countOperations = () => Object.values(copy.paths).reduce((sum, item) => sum + methods.filter((method) => item[method]).length, 0);
  let total = countOperations();
  for (const [path, item] of Object.entries(document.paths)) {
    if (total >= count) break;
    const clone = structuredClone(item);
    for (const method of methods) {
      if (!clone[method]) continue;
      if (total >= count) delete clone[method];
      else {
        if (clone[method].operationId) clone[method].operationId = `bench-copy/${clone[method].operationId}`;
        total += 1;
      }
    }
    copy.paths[`/bench-copy${path}`] = clone;
  }
  return copy;
}

const dereferenceOnly = await measure('dereference only (@readme/openapi-parser)', () => dereference(documentPath));
const fullImport = await measure('full import (importOpenApi)', () => importOpenApi(documentName, { baseDirectory: corpus }));
const imported = await importOpenApi(documentName, { baseDirectory: corpus });

const original = JSON.parse(await readFile(documentPath, 'utf8'));
const thousandText = JSON.stringify(withOperationCount(original, 1000));
const thousand = await importOpenApiText(thousandText, 'bench-1000.json', { baseDirectory: corpus });
const thousandImport = await measure('1,000-operation import (importOpenApiText)', () =>
  importOpenApiText(thousandText, 'bench-1000.json', { baseDirectory: corpus }),
);

const ratio = fullImport.medianMs / dereferenceOnly.medianMs;
const results = {
  document: documentName,
  documentBytes: (await readFile(documentPath)).byteLength,
  operations: imported.operations.length,
  supported: imported.operations.filter((operation) => operation.status === 'supported').length,
  node: process.version,
  cpus: availableParallelism(),
  dereferenceOnlyMs: dereferenceOnly.medianMs,
  importMs: fullImport.medianMs,
  ratio: Number(ratio.toFixed(2)),
  ratioTarget: 2,
  thousandOperations: { operations: thousand.operations.length, importMs: thousandImport.medianMs, targetMs: 3000 },
  runs: [dereferenceOnly, fullImport, thousandImport],
  isWithinTargets: ratio <= 2 && thousandImport.medianMs < 3000,
};

const rows = [
  ['measure', 'value'],
  ['document', `${documentName} (${(results.documentBytes / 1e6).toFixed(1)} MB)`],
  ['operations (supported)', `${results.operations} (${results.supported})`],
  ['dereference only, median ms', String(results.dereferenceOnlyMs)],
  ['full import, median ms', String(results.importMs)],
  ['ratio import / dereference', `${results.ratio} (target ≤ 2)`],
  ['1,000-operation import, median ms', `${results.thousandOperations.importMs} (target < 3000)`],
  ['within targets', results.isWithinTargets ? 'yes' : 'NO'],
];
const width = Math.max(...rows.map(([label]) => label.length));
for (const [label, value] of rows) console.log(`${label.padEnd(width)}  ${value}`);

const output = join(root, 'bench', 'results', 'import.json');
await mkdir(dirname(output), { recursive: true });
await writeFile(output, `${JSON.stringify(results, null, 2)}\n`);
console.log(`\nwritten to ${output}`);
