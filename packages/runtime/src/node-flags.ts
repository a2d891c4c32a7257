/**
 * The Node flag every serving process runs with (docs/server.md, "Memory"). V8 sizes the young generation
 * for throughput, not for a small server: on 64-bit it lets each of its two semi-spaces grow to 16 MB, and a
 * gateway under load keeps all 32 MB committed; bounding a semi-space to SEMI_SPACE_MB keeps a serving process
 * small at no cost per call (figures: docs/performance.md, "The young-generation size flag"). The flag must be
 * on the process's command line (or in NODE_OPTIONS): V8 sizes the heap before any JavaScript runs, so
 * `v8.setFlagsFromString` at run time does not change it.
 *
 * Where it is set, all from this one value: `gateway serve` re-executes itself with it (serveReexecArguments,
 * below, called first thing by the CLI's main.ts), the workers of `gateway serve --workers N` (cluster.ts),
 * `pnpm start` and `pnpm gateway`, and the benches' gateway processes (bench/support.mjs). This file imports
 * nothing, so the CLI's entry point and scripts import it alone (`@gateway/runtime/node-flags`).
 */
export const SEMI_SPACE_MB = 2;
export const SEMI_SPACE_FLAG = `--max-semi-space-size=${SEMI_SPACE_MB}`;

/** `--max-semi-space-size` in any of the spellings Node and V8 accept (dashes or underscores, `=N` or ` N`). */
const SEMI_SPACE_OPTION = /(^|\s)--max[-_]semi[-_]space[-_]size(=|\s|$)/;

/** True when the operator already chose a semi-space size, on the command line or in NODE_OPTIONS. */
export function choosesSemiSpace(execArgv: readonly string[], nodeOptions = ''): boolean {
  return SEMI_SPACE_OPTION.test(execArgv.join(' ')) || SEMI_SPACE_OPTION.test(nodeOptions);
}

/**
 * The Node flags for a serving process started from one with `execArgv`: those flags plus SEMI_SPACE_FLAG,
 * unless a semi-space size was chosen already (an operator's own choice wins, wherever it was made).
 */
export function servingExecArgv(execArgv: readonly string[], nodeOptions = ''): string[] {
  return choosesSemiSpace(execArgv, nodeOptions) ? [...execArgv] : [SEMI_SPACE_FLAG, ...execArgv];
}

/**
 * The argument vector `gateway serve` re-executes itself with (`process.execve`: same process id, same
 * standard streams) to run with SEMI_SPACE_FLAG, or undefined when it should run as it is: another command,
 * a semi-space size already chosen (command line or NODE_OPTIONS), or no `process.execve` (Node before 22.15
 * and Windows; `serve` then warns with the fix). A plain `#!/usr/bin/env node` bin is kept on purpose:
 * `env -S` to pass the flag in the shebang does not exist in BusyBox (Alpine images).
 */
export function serveReexecArguments(
  argv: readonly string[],
  execArgv: readonly string[],
  nodeOptions: string | undefined,
  canExecve: boolean,
): string[] | undefined {
  if (!canExecve || argv[2] !== 'serve' || choosesSemiSpace(execArgv, nodeOptions ?? '')) return undefined;
  return [argv[0]!, SEMI_SPACE_FLAG, ...execArgv, ...argv.slice(1)];
}
