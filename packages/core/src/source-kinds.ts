/**
 * What differs between source kinds for the lock, in one place: each function switches exhaustively on the
 * kind, so adding a kind fails to compile until every concern (fingerprint, order, description) handles it.
 * The per-kind work lives in openapi/ and mcp/.
 */
import type { LockedEntry, LockedMcpTool, LockedOperation, NotOfferedEntry, SourceKind } from './model.js';
import { fingerprintOf } from './openapi/normalise.js';
import { mcpFingerprintOf } from './mcp/normalise.js';

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The fingerprint an entry must carry, recomputed from its fields. */
export function entryFingerprint(kind: SourceKind, entry: LockedEntry): string {
  switch (kind) {
    case 'openapi':
      return fingerprintOf(entry as LockedOperation);
    case 'mcp':
      return mcpFingerprintOf(entry as LockedMcpTool);
  }
}

/** `tool (GET /orders)` or `tool (mcp tool name)`: how messages name an entry. */
export function describeEntry(kind: SourceKind, entry: LockedEntry): string {
  switch (kind) {
    case 'openapi': {
      const operation = entry as LockedOperation;
      return `${operation.tool} (${operation.method} ${operation.path})`;
    }
    case 'mcp':
      return `${entry.tool} (MCP tool ${(entry as LockedMcpTool).name})`;
  }
}

/** How a not-offered entry names its operation: `GET /orders` or the upstream MCP tool name. */
export function entryOperation(kind: SourceKind, entry: LockedEntry): string {
  switch (kind) {
    case 'openapi': {
      const operation = entry as LockedOperation;
      return `${operation.method} ${operation.path}`;
    }
    case 'mcp':
      return (entry as LockedMcpTool).name;
  }
}

/** The compact record an in-use publication keeps of an entry that is not one of its tools. */
export function notOfferedEntry(kind: SourceKind, entry: LockedEntry): NotOfferedEntry {
  const isUnsupported = entry.status !== 'supported';
  return {
    tool: entry.tool,
    operation: entryOperation(kind, entry),
    status: isUnsupported ? 'unsupported' : 'not selected',
    reason: isUnsupported ? (entry.reason ?? null) : null,
    fingerprint: entry.fingerprint,
  };
}

/** A not-offered entry in a sentence: `delete_user (DELETE /users/{id}): not selected`. */
export function describeNotOffered(entry: NotOfferedEntry): string {
  const why =
    entry.status === 'unsupported'
      ? `unsupported, ${entry.reason ? `${entry.reason.code}: ${entry.reason.message}` : 'no reason recorded'}`
      : 'not selected';
  return `${entry.tool} (${entry.operation}): ${why}`;
}

/** Lock order of entries: operations by path, method, tool; MCP tools by tool name. */
export function compareEntries(kind: SourceKind, a: LockedEntry, b: LockedEntry): number {
  switch (kind) {
    case 'openapi': {
      const left = a as LockedOperation;
      const right = b as LockedOperation;
      return compareText(left.path, right.path) || compareText(left.method, right.method) || compareText(left.tool, right.tool);
    }
    case 'mcp':
      return compareText(a.tool, b.tool);
  }
}

/** What the fingerprint covers, for messages. */
export function fingerprintCoverage(kind: SourceKind): string {
  switch (kind) {
    case 'openapi':
      return 'the method, path, server, parameters, body, security or input schema were edited';
    case 'mcp':
      return 'the name, title, description, input or output schema or annotations were edited';
  }
}
