// `pnpm bench` = `pnpm build && node bench/run.mjs`: the importer bench, then the server bench.
// Each writes its figures to bench/results/*.json and prints a table. Not part of the test suite.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
let failed = false;
for (const script of ['bench/import.mjs', 'bench/server.mjs']) {
  console.log(`\n== node ${script}`);
  const result = spawnSync(process.execPath, [script], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`${script} exited ${result.status ?? result.signal}`);
    failed = true;
  }
}
process.exitCode = failed ? 1 : 0;
