/**
 * How deep tools.lock may nest, shared by the lock's reader and writer (lockfile.ts) and the importer that keeps
 * each tool's inputSchema within it (openapi/normalise.ts): a module of its own so neither imports the other.
 */

/**
 * Deepest nesting of mappings and sequences the lock reader accepts (js-yaml `maxDepth`, whose default of 100
 * refused locks of ordinary deeply nested schemas). Kept well below what the YAML writer's recursion can take on
 * a small (worker thread) stack: about 1,000 levels overflow it. The writer refuses to write anything deeper
 * (`LOCK_NESTING_TOO_DEEP`), and the importer keeps each tool's inputSchema within `MAX_INPUT_SCHEMA_DEPTH`, so a
 * lock the gateway writes is always one it can read.
 */
export const LOCK_MAX_DEPTH = 256;

/** Levels above an operation's `inputSchema` in the lock: root, sources, source, publications, publication, operations, operation. */
const INPUT_SCHEMA_FRAME_DEPTH = 7;

/** Deepest inputSchema (its own mapping counting as 1) that fits in a lock within `LOCK_MAX_DEPTH`. */
export const MAX_INPUT_SCHEMA_DEPTH = LOCK_MAX_DEPTH - INPUT_SCHEMA_FRAME_DEPTH;

/**
 * Nesting depth of arrays and objects in a JSON-like value (a scalar is 0, `{}` is 1), without recursion so
 * that hostile depth cannot overflow the stack. Stops counting once past `limit` (returns `limit + 1`).
 */
export function nestingDepth(value: unknown, limit = Number.MAX_SAFE_INTEGER): number {
  let deepest = 0;
  const pending: Array<[unknown, number]> = [[value, 1]];
  while (pending.length > 0) {
    const [current, depth] = pending.pop() as [unknown, number];
    if (typeof current !== 'object' || current === null) continue;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return limit + 1;
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (typeof child === 'object' && child !== null) pending.push([child, depth + 1]);
    }
  }
  return deepest;
}
