import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Tests import workspace packages from source; CLI subprocess tests run the built binary (see globalSetup).
    alias: {
      '@gateway/core': fileURLToPath(new URL('./packages/core/src/index.ts', import.meta.url)),
      '@gateway/runtime': fileURLToPath(new URL('./packages/runtime/src/index.ts', import.meta.url)),
      '@gateway/server': fileURLToPath(new URL('./packages/server/src/index.ts', import.meta.url)),
    },
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'test-support/**/*.test.ts'],
    globalSetup: ['./test-support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
