/**
 * Integers beyond ±(2^53 − 1) kept exact (docs/lockfile.md › Large integers).
 *
 * JavaScript numbers are IEEE-754 doubles: `18014398509481983` read by JSON.parse becomes 18014398509481984, so
 * a bound written in a document would reach tools.lock and the served inputSchema changed. An integer literal
 * of a document (or of the lock) whose digits a double would change is therefore read as a BigInt and stays one
 * in the lock model; every writer of that model (the lock's YAML, canonical JSON for fingerprints and the
 * signature, the `tools/list` JSON) writes its exact digits. Only the validator (ajv) and the MCP SDK, which
 * know only numbers, get a copy with doubles (`withDoubles`): what they enforce is what any JSON client reads.
 *
 * Cost: a document or lock without a run of 16 digits (the shortest unsafe integer, 9007199254740992, has 16)
 * is parsed as before and yields no BigInt, so nothing changes for it, byte for byte. Nor does it for a literal
 * that is already the shortest form of its double (18446744073709552000): it stays a number, written alike.
 */
import { randomBytes } from 'node:crypto';

/** Cheap pre-check: text without a run of 16 digits holds no unsafe integer literal. */
const LONG_DIGIT_RUN = /\d{16}/;

export function mayHoldUnsafeIntegers(text: string): boolean {
  return LONG_DIGIT_RUN.test(text);
}

/** True when the JSON-like value holds a BigInt anywhere (iterative: depth is bounded elsewhere, not here). */
export function holdsBigInt(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current === 'bigint') return true;
    if (typeof current !== 'object' || current === null) continue;
    for (const item of Array.isArray(current) ? current : Object.values(current)) {
      if (typeof item === 'bigint') return true;
      if (typeof item === 'object' && item !== null) stack.push(item);
    }
  }
  return false;
}

/** Deep copy with every BigInt as the nearest double; the value itself when it holds none. */
export function withDoubles<T>(value: T): T {
  if (!holdsBigInt(value)) return value;
  return mapBigInts(value, (big) => Number(big)) as T;
}

/** Deep copy with each BigInt replaced (recursive; used only on values that hold a BigInt). */
function mapBigInts(value: unknown, replace: (big: bigint) => unknown): unknown {
  if (typeof value === 'bigint') return replace(value);
  if (Array.isArray(value)) return value.map((item) => mapBigInts(item, replace));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      // Own `__proto__` keys (documents may have one) must stay data, not become the copy's prototype.
      Object.defineProperty(out, key, { value: mapBigInts(item, replace), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

/**
 * A BigInt whose number prints the same digits is a plain number again (toExactInteger): values parsed
 * exactly compare and serialise like values parsed by JSON.parse wherever that loses no digit.
 */
export function narrowSafeBigInts(value: unknown): unknown {
  if (typeof value === 'bigint') return toExactInteger(value);
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current !== 'object' || current === null) continue;
    const entries: Array<[string | number, unknown]> = Array.isArray(current)
      ? current.map((item, index) => [index, item])
      : Object.entries(current);
    for (const [key, item] of entries) {
      if (typeof item === 'bigint') (current as Record<string | number, unknown>)[key] = toExactInteger(item);
      else if (typeof item === 'object' && item !== null) stack.push(item);
    }
  }
  return value;
}

/**
 * The integer as a number when the number prints as the same digits (every safe integer, and a literal such as
 * 18446744073709552000 that is already the shortest form of its double), else as a BigInt. So a BigInt appears
 * only where a double would change the digits written, and documents that lose nothing are untouched.
 */
export function toExactInteger(big: bigint): number | bigint {
  const asNumber = Number(big);
  return String(asNumber) === big.toString() ? asNumber : big;
}

function placeholderPrefix(): string {
  // 96 unpredictable bits per call: no string of a document (even one written to collide) matches a placeholder.
  return `exact-integer-${randomBytes(12).toString('hex')}:`;
}

/**
 * Serialises a JSON-like value with `serialise` (JSON.stringify, RFC 8785 canonicalisation, …), writing each
 * BigInt as its exact decimal digits: BigInts become placeholder strings, which are then replaced, quotes
 * included, by the digits. `serialise` must write strings as JSON string literals.
 */
export function serialiseWithExactIntegers(value: unknown, serialise: (value: unknown) => string): string {
  if (!holdsBigInt(value)) return serialise(value);
  const prefix = placeholderPrefix();
  const text = serialise(mapBigInts(value, (big) => `${prefix}${big.toString()}`));
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text.replace(new RegExp(`"${escaped}(-?\\d+)"`, 'g'), '$1');
}

/** JSON.stringify, writing BigInts as their exact digits. */
export function stringifyExact(value: unknown, space?: number): string {
  return serialiseWithExactIntegers(value, (plain) => JSON.stringify(plain, null, space));
}

/**
 * JSON.parse that reads integer literals beyond what a double holds as BigInts. The text is scanned once
 * (strings skipped); each such literal becomes a placeholder string that the reviver turns into a BigInt.
 */
export function parseJsonExact(text: string): unknown {
  if (!mayHoldUnsafeIntegers(text)) return JSON.parse(text);
  const prefix = placeholderPrefix();
  let rewritten = '';
  let copiedUpTo = 0;
  let replaced = 0;
  // Strings (skipped whole, escapes included) or integer literals of 16 digits or more; anything else,
  // numbers with a fraction or an exponent among them, is left to JSON.parse (which also rejects bad text).
  const tokens = /"[^"\\]*(?:\\[\s\S][^"\\]*)*"|-?\d{16,}(?![.eE\d])/g;
  for (let found = tokens.exec(text); found !== null; found = tokens.exec(text)) {
    const literal = found[0];
    if (literal.charCodeAt(0) === 0x22 /* " */) continue;
    // A run inside a longer literal (`1.00000000000000001234`) is preceded by a digit, a dot, or an exponent.
    const before = found.index > 0 ? text[found.index - 1]! : '';
    if (/[\d.eE+-]/.test(before)) continue;
    if (String(Number(literal)) === literal) continue;
    rewritten += `${text.slice(copiedUpTo, found.index)}"${prefix}${literal}"`;
    copiedUpTo = found.index + literal.length;
    replaced += 1;
  }
  if (replaced === 0) return JSON.parse(text);
  rewritten += text.slice(copiedUpTo);
  return JSON.parse(rewritten, (_key, item: unknown) =>
    typeof item === 'string' && item.startsWith(prefix) ? BigInt(item.slice(prefix.length)) : item,
  );
}
