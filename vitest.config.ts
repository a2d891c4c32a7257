import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = fileURLToPath(new URL('.', import.meta.url));

/**
 * One project per package, so each can be run alone (`pnpm --filter @gateway/core test`, or
 * `vitest run --project core`). Core and runtime tests import sources only and start at once; the server and
 * CLI projects run the built `gateway` binary, so their global setup builds first (test-support/global-setup.ts).
 */
const shared = {
  testTimeout: 60_000,
  hookTimeout: 120_000,
};
const build = ['./test-support/global-setup.ts'];

export default defineConfig({
  root,
  resolve: {
    // Tests import workspace packages from source; CLI subprocess tests run the built binary (see globalSetup).
    // Exact matches (a bare key would also match `@gateway/runtime/…` as a path prefix).
    alias: [
      { find: /^@gateway\/core$/, replacement: fileURLToPath(new URL('./packages/core/src/index.ts', import.meta.url)) },
      { find: /^@gateway\/runtime$/, replacement: fileURLToPath(new URL('./packages/runtime/src/index.ts', import.meta.url)) },
      {
        find: /^@gateway\/runtime\/node-flags$/,
        replacement: fileURLToPath(new URL('./packages/runtime/src/node-flags.ts', import.meta.url)),
      },
      { find: /^@gateway\/server$/, replacement: fileURLToPath(new URL('./packages/server/src/index.ts', import.meta.url)) },
    ],
  },
  test: {
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      { extends: true, test: { ...shared, name: 'core', include: ['packages/core/src/**/*.test.ts', 'packages/core/test/**/*.test.ts'] } },
      { extends: true, test: { ...shared, name: 'runtime', include: ['packages/runtime/src/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          ...shared,
          name: 'server',
          include: ['packages/server/src/**/*.test.ts', 'packages/server/test/**/*.test.ts'],
          globalSetup: build,
        },
      },
      {
        extends: true,
        test: { ...shared, name: 'cli', include: ['packages/cli/src/**/*.test.ts', 'packages/cli/test/**/*.test.ts'], globalSetup: build },
      },
      // Checks over the whole repository (package boundaries, folder cycles): source text only, no build.
      { extends: true, test: { ...shared, name: 'repository', include: ['test-support/**/*.test.ts'] } },
    ],
  },
});
