/**
 * The Node flag every serving process runs with (docs/server.md, "Memory"). V8 sizes the young generation
 * for throughput, not for a small server: on 64-bit it lets each of its two semi-spaces grow to 16 MB, and a
 * gateway under load keeps all 32 MB committed. Bounding a semi-space to SEMI_SPACE_MB cut the resident memory
 * of one `gateway serve` process by ~30 MB at rest and under load (bench/memory.mjs), at no measurable CPU cost
 * per call (bench/peers). The flag must be on the process's command line (or in NODE_OPTIONS): V8 sizes the heap
 * before any JavaScript runs, so `v8.setFlagsFromString` at run time does not change it (measured).
 *
 * Where it is set, all from this one value: the `gateway` bin's shebang (packages/cli/src/main.ts, checked by
 * its test), the workers of `gateway serve --workers N` (cluster.ts), `pnpm start` (scripts/start-demo.mjs) and
 * the benches' gateway processes (bench/support.mjs). This file imports nothing, so a script can import it alone.
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
