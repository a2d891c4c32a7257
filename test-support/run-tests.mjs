#!/usr/bin/env node
// `pnpm test`: install what the tests need beyond `pnpm install` (chromium, a side Node 24), type-check and
// build, run every test with vitest, then print the plain closing line `N passed, N failed` that CI reads.
// Exits non-zero when anything fails.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';

const reportPath = '.tmp/vitest-report.json';
mkdirSync('.tmp', { recursive: true });
rmSync(reportPath, { force: true });

const prerequisites = spawnSync('bash', ['scripts/install-test-prerequisites.sh'], { stdio: 'inherit' });
if (prerequisites.status !== 0) {
  console.error('could not install the test prerequisites (see above)');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const build = spawnSync(
  'node',
  ['node_modules/typescript/bin/tsc', '-b', 'packages/core', 'packages/runtime', 'packages/server', 'packages/cli'],
  {
    stdio: 'inherit',
  },
);
if (build.status !== 0) {
  console.error('build failed: fix the type errors above');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

// Tests are code too: type-check them (without emitting) so a wrong assumption fails here, not at run time.
const testTypes = spawnSync('node', ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.tests.json'], { stdio: 'inherit' });
if (testTypes.status !== 0) {
  console.error('the tests do not type-check: fix the errors above');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

// The linter and the formatter (Biome, biome.jsonc) are part of the test: a lint error or an unformatted file fails
// `pnpm test` like a failing test (`pnpm format` fixes the formatting).
const lint = spawnSync(
  'node',
  ['node_modules/@biomejs/biome/bin/biome', 'check', '--error-on-warnings', 'packages', 'bench', 'scripts', 'test-support'],
  {
    stdio: 'inherit',
  },
);
if (lint.status !== 0) {
  console.error('lint or format check failed: fix the findings above (`pnpm lint`, `pnpm format`)');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const vitest = spawnSync(
  'node',
  [
    'node_modules/vitest/vitest.mjs',
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${reportPath}`,
    ...process.argv.slice(2),
  ],
  { stdio: 'inherit', env: { ...process.env, GATEWAY_SKIP_BUILD: '1' } },
);

let passed = 0;
let failed = 0;
if (existsSync(reportPath)) {
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  passed = report.numPassedTests ?? 0;
  failed = report.numFailedTests ?? 0;
  // A suite that failed to load has no tests counted: count it as a failure so it cannot hide.
  const brokenSuites = (report.testResults ?? []).filter(
    (suite) => suite.status === 'failed' && (suite.assertionResults ?? []).length === 0,
  ).length;
  failed += brokenSuites;
} else {
  failed = 1;
}
const exitCode = vitest.status !== 0 || failed > 0 ? 1 : 0;
if (exitCode !== 0 && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed`);
process.exit(exitCode);
