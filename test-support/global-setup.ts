import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * CLI and server tests run the built binary as a user would, so the `server` and `cli` projects (vitest.config.ts)
 * build before their tests; `core`, `runtime` and `repository` import sources only and do not wait for a build.
 * Type errors are reported by `pnpm build` (which `pnpm test` runs first, then sets GATEWAY_SKIP_BUILD), so here a
 * failed type check does not stop the emit that tests need.
 */
export default function setup(): void {
  if (process.env.GATEWAY_SKIP_BUILD === '1') return;
  const root = fileURLToPath(new URL('..', import.meta.url));
  try {
    execFileSync(
      'node',
      ['node_modules/typescript/bin/tsc', '-b', 'packages/core', 'packages/runtime', 'packages/server', 'packages/cli'],
      {
        cwd: root,
        stdio: 'pipe',
      },
    );
  } catch {
    // tsc -b still emits JavaScript when types fail; the test run reports behaviour, `pnpm build` reports types.
  }
}
