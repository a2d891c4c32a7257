/**
 * MCP tool normalisation: a tool as an upstream MCP server lists it → `McpTool` (model.ts), with a fingerprint
 * over everything the model sees of it. Pure: the listing itself is done by an injected lister
 * (@gateway/runtime's mcp/ client), so core never opens a connection.
 */
import { canonicalDigest } from '../canonical.js';
import type { JsonSchema, McpTool } from '../model.js';
import { toolTextProblem } from '../tool-text.js';

/** A tool as `tools/list` returns it (the fields the gateway reads; anything else is ignored). */
export interface ListedMcpTool {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
}

/** MCP's own tool-name rule (SEP-986): what a client of the gateway may be offered. */
export const MCP_TOOL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/** The separator of the collision prefix: `<source>__<tool>` (docs/sources-mcp.md). */
export const MCP_TOOL_PREFIX_SEPARATOR = '__';

/** The fields the fingerprint covers: exactly what the model reads, so a new description is a new tool. */
export type McpToolShape = Pick<McpTool, 'name' | 'title' | 'description' | 'inputSchema' | 'outputSchema' | 'annotations'>;

/** `sha256:<hex>` of the RFC 8785 canonical JSON of the McpToolShape fields. */
export function mcpFingerprintOf(tool: McpToolShape): string {
  return canonicalDigest({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: tool.inputSchema,
    outputSchema: tool.outputSchema,
    annotations: tool.annotations,
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The gateway name of one upstream tool. The upstream name is kept unless another source of the lock already
 * offers (or proposes) it; then it becomes `<source>__<name>`. The rule depends only on the names other sources
 * hold, so the same lock and the same listing always give the same names.
 */
export function mcpGatewayToolName(sourceName: string, upstreamName: string, takenByOtherSources: ReadonlySet<string>): string {
  return takenByOtherSources.has(upstreamName) ? `${sourceName}${MCP_TOOL_PREFIX_SEPARATOR}${upstreamName}` : upstreamName;
}

/**
 * Why an MCP tool is `unsupported` (docs/lockfile.md lists them with the OpenAPI reasons). When several apply, the
 * first in this order is recorded.
 */
export const MCP_UNSUPPORTED_REASON_CODES = [
  'TOOL_TEXT_HIDDEN_CHARACTERS',
  'MCP_TOOL_NAME_INVALID',
  'MCP_TOOL_NAME_TOO_LONG',
  'MCP_INPUT_SCHEMA_INVALID',
  'TOOL_DESCRIPTION_TOO_LONG',
] as const;

/**
 * One listed tool → McpTool. Problems make it unsupported (with a reason), never make the import fail: a name the
 * lock's gateway-name rule refuses (non-ASCII, a look-alike letter, a zero-width space) is kept as the upstream
 * wrote it, and the tool stays in the lock as unsupported.
 */
export function normaliseMcpTool(sourceName: string, listed: ListedMcpTool, takenByOtherSources: ReadonlySet<string>): McpTool {
  const name = String(listed.name);
  const shape: McpToolShape = {
    name,
    title: typeof listed.title === 'string' ? listed.title : null,
    description: typeof listed.description === 'string' ? listed.description : '',
    inputSchema: (isObject(listed.inputSchema) ? listed.inputSchema : { type: 'object' }) as JsonSchema,
    outputSchema: isObject(listed.outputSchema) ? (listed.outputSchema as JsonSchema) : null,
    annotations: isObject(listed.annotations) ? listed.annotations : null,
  };
  const tool = mcpGatewayToolName(sourceName, name, takenByOtherSources);
  const textProblem = toolTextProblem({
    name,
    title: shape.title,
    description: shape.description,
    schemas: { inputSchema: listed.inputSchema, outputSchema: listed.outputSchema, annotations: listed.annotations },
  });
  let reason: McpTool['reason'] = null;
  if (textProblem?.code === 'TOOL_TEXT_HIDDEN_CHARACTERS') {
    reason = textProblem;
  } else if (!MCP_TOOL_NAME_PATTERN.test(name)) {
    reason = {
      code: 'MCP_TOOL_NAME_INVALID',
      message:
        `the upstream tool name ${JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}…` : name)} is not a valid MCP tool name ` +
        '(A-Z a-z 0-9 _ . -, 1 to 128)',
    };
  } else if (!MCP_TOOL_NAME_PATTERN.test(tool)) {
    reason = { code: 'MCP_TOOL_NAME_TOO_LONG', message: `the prefixed tool name ${tool} is longer than 128 characters` };
  } else if (!isObject(listed.inputSchema) || listed.inputSchema.type !== 'object') {
    reason = { code: 'MCP_INPUT_SCHEMA_INVALID', message: 'the tool has no inputSchema of type object' };
  } else if (textProblem) {
    reason = textProblem;
  }
  return {
    tool,
    name,
    title: shape.title,
    description: shape.description,
    status: reason ? 'unsupported' : 'supported',
    reason,
    inputSchema: shape.inputSchema,
    outputSchema: shape.outputSchema,
    annotations: shape.annotations,
    fingerprint: mcpFingerprintOf(shape),
  };
}

export interface ImportedMcpTools {
  /** The RFC 8785 digest of every upstream name with its fingerprint: changes when any tool changes. */
  documentDigest: string;
  /** Sorted by gateway tool name; an upstream listing the same name twice keeps the first and marks the rest. */
  operations: McpTool[];
}

/** A whole listing → the proposal's entries and its digest. */
export function normaliseMcpTools(
  sourceName: string,
  listed: readonly ListedMcpTool[],
  takenByOtherSources: ReadonlySet<string> = new Set(),
): ImportedMcpTools {
  const seen = new Set<string>();
  const operations: McpTool[] = [];
  for (const entry of listed) {
    const tool = normaliseMcpTool(sourceName, entry, takenByOtherSources);
    // A second tool of the same name could never be addressed: keep the first (the order the server gave).
    if (seen.has(tool.tool)) continue;
    seen.add(tool.tool);
    operations.push(tool);
  }
  operations.sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
  return {
    documentDigest: canonicalDigest(operations.map((tool) => ({ name: tool.name, fingerprint: tool.fingerprint }))),
    operations,
  };
}
