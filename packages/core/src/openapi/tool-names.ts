/**
 * Tool names: `^[a-z0-9_]{1,64}$`, deterministic, unique within a source. The rule is documented in
 * docs/lockfile.md ("Tool names"); any change to it renames tools, so change both together.
 */
import { createHash } from 'node:crypto';
import { compareText } from '../compare-text.js';

export const MAX_TOOL_NAME_LENGTH = 64;
export const TOOL_NAME_PATTERN = /^[a-z0-9_]{1,64}$/;

/**
 * snake_case of free text: camelCase and PascalCase words split (`getHTTPStatus` → `get_http_status`), accents
 * dropped, every run of other characters one `_`, no leading or trailing `_`, lower case.
 */
export function snakeCase(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** `<method>_<path>` where each `{param}` reads `by_param`: `GET /pets/{petId}` → `get_pets_by_pet_id`. */
export function nameFromMethodAndPath(method: string, path: string): string {
  const words = path.replace(/\{([^}]*)\}/g, (_match, name: string) => ` by ${name} `);
  return snakeCase(`${method.toLowerCase()} ${words}`);
}

/** Names longer than 64 keep their first 55 characters (trailing `_` trimmed), then `_` and 8 hex of sha256(name). */
export function fitToolName(name: string): string {
  if (name.length <= MAX_TOOL_NAME_LENGTH) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${name.slice(0, 55).replace(/_+$/, '')}_${hash}`;
}

/** The name before collisions are resolved: from operationId when it yields any character, else method and path. */
export function baseToolName(operation: { operationId: string | null; method: string; path: string }): string {
  const fromId = operation.operationId === null ? '' : snakeCase(operation.operationId);
  const name = fromId !== '' ? fromId : nameFromMethodAndPath(operation.method, operation.path);
  return fitToolName(name === '' ? 'operation' : name);
}

function withSuffix(base: string, suffix: string): string {
  return base.length + suffix.length <= MAX_TOOL_NAME_LENGTH ? base + suffix : base.slice(0, MAX_TOOL_NAME_LENGTH - suffix.length) + suffix;
}

/**
 * Unique names for a list of operations (returned in the same order). Operations sharing a base name are ordered
 * by (path, method); the first keeps the name, the next get `_2`, `_3`… (cut so the result stays ≤ 64), skipping
 * any name already taken by another operation's base name.
 */
export function assignToolNames(operations: { operationId: string | null; method: string; path: string }[]): string[] {
  const bases = operations.map(baseToolName);
  const groups = new Map<string, number[]>();
  bases.forEach((base, index) => {
    const group = groups.get(base);
    if (group) group.push(index);
    else groups.set(base, [index]);
  });
  const taken = new Set(bases);
  const names = [...bases];
  for (const base of [...groups.keys()].sort(compareText)) {
    const members = (groups.get(base) as number[]).sort((a, b) => {
      const first = operations[a] as { path: string; method: string };
      const second = operations[b] as { path: string; method: string };
      return compareText(first.path, second.path) || compareText(first.method, second.method) || a - b;
    });
    let counter = 2;
    for (const index of members.slice(1)) {
      let candidate = withSuffix(base, `_${counter}`);
      while (taken.has(candidate)) {
        counter += 1;
        candidate = withSuffix(base, `_${counter}`);
      }
      counter += 1;
      taken.add(candidate);
      names[index] = candidate;
    }
  }
  return names;
}
