import type { LockedMcpTool, LockedOperation } from '@gateway/core';

/** MCP tool annotations (hints a client shows the person; never a security boundary). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint: boolean;
}

/**
 * Methods that only read (RFC 9110 §9.2.1 safe methods, plus the safe OpenAPI 3.2 / HTTP QUERY method,
 * draft-ietf-httpbis-safe-method-w-body). OPTIONS and TRACE are safe too but are never imported as tools.
 */
const READ_ONLY_METHODS = new Set(['GET', 'HEAD', 'QUERY']);
/** RFC 9110 §9.2.2: PUT and DELETE are idempotent (and the safe methods, which are read-only anyway). */
const IDEMPOTENT_METHODS = new Set(['PUT', 'DELETE']);

/**
 * Annotations derived from the HTTP method alone: the one fact about side effects an OpenAPI document states
 * reliably. `destructiveHint` and `idempotentHint` are only meaningful when `readOnlyHint` is false
 * (MCP Tools › ToolAnnotations), so read-only tools omit them.
 */
export function toolAnnotations(operation: Pick<LockedOperation, 'method' | 'title'>): ToolAnnotations {
  const method = operation.method.toUpperCase();
  const annotations: ToolAnnotations = { readOnlyHint: READ_ONLY_METHODS.has(method), openWorldHint: true };
  if (operation.title) annotations.title = operation.title;
  if (!annotations.readOnlyHint) {
    annotations.destructiveHint = method === 'DELETE';
    annotations.idempotentHint = IDEMPOTENT_METHODS.has(method);
  }
  return annotations;
}

/**
 * An MCP tool's annotations are the upstream's own claims: passed on for the client to show, but never
 * trusted by the gateway (a missing hint takes MCP's cautious default: not read-only, open world).
 */
export function mcpToolAnnotations(tool: Pick<LockedMcpTool, 'annotations' | 'title'>): ToolAnnotations {
  const upstream = tool.annotations ?? {};
  const annotations: ToolAnnotations = {
    readOnlyHint: upstream.readOnlyHint === true,
    openWorldHint: upstream.openWorldHint !== false,
  };
  const title = tool.title ?? (typeof upstream.title === 'string' ? upstream.title : undefined);
  if (title) annotations.title = title;
  if (!annotations.readOnlyHint) {
    annotations.destructiveHint = upstream.destructiveHint !== false;
    annotations.idempotentHint = upstream.idempotentHint === true;
  }
  return annotations;
}
