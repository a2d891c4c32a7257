import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { ListedTool, PublicationRegistry, PublicationSnapshot } from '../publications/registry.js';
import type { McpCaller } from '../calls/caller.js';
import { compareText } from '@gateway/core';

/** Default page size of `tools/list`. */
export const DEFAULT_TOOLS_PAGE_SIZE = 1000;

const sortedKeysCache = new WeakMap<ReadonlyMap<string, string>, string[]>();

function sortedKeys(map: ReadonlyMap<string, string>): string[] {
  let keys = sortedKeysCache.get(map);
  if (!keys) {
    keys = [...map.keys()].sort(compareText);
    sortedKeysCache.set(map, keys);
  }
  return keys;
}

/** Index of the first name strictly after `after` in a sorted list. */
function firstAfter(names: readonly string[], after: string): number {
  let low = 0;
  let high = names.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (names[middle]! <= after) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Cursors are opaque to clients (MCP Pagination): base64url of the last name returned. */
export function encodeCursor(lastName: string): string {
  return Buffer.from(JSON.stringify({ v: 1, after: lastName }), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): string {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { v?: unknown; after?: unknown };
    if (value.v === 1 && typeof value.after === 'string') return value.after;
  } catch {
    // fall through
  }
  // MCP Pagination: an invalid cursor is answered -32602 (Invalid params).
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor');
}

/**
 * One page of the caller's tools in code-unit order of their names (deterministic, MCP Tools). The list
 * varies by the caller's session only, never by connection. `""` is a valid cursor meaning "start".
 */
export function listToolsPage(
  snapshot: PublicationSnapshot,
  registry: PublicationRegistry,
  caller: McpCaller,
  cursor: string | undefined,
  pageSize: number,
): { tools: ListedTool[]; nextCursor?: string } {
  // Walk the smaller of the two sorted name lists: the session's tools or the index.
  const candidates = caller.tools.size < snapshot.names.length ? sortedKeys(caller.tools) : snapshot.names;
  let index = cursor === undefined || cursor === '' ? 0 : firstAfter(candidates, decodeCursor(cursor));
  const tools: ListedTool[] = [];
  let last: string | undefined;
  for (; index < candidates.length; index += 1) {
    const name = candidates[index]!;
    const tool = snapshot.tools.get(name);
    if (!tool || caller.tools.get(name) !== tool.entry.fingerprint) continue;
    if (registry.blockedReason(tool.sourceName, name) !== undefined) continue;
    if (tools.length === pageSize) {
      // There is at least one more visible tool: hand out a cursor.
      return { tools, nextCursor: encodeCursor(last!) };
    }
    tools.push(tool.listed);
    last = name;
  }
  return { tools };
}
