/**
 * Executes a tool of an MCP source (its arguments already checked against the frozen inputSchema by the
 * executor): forward the call under the upstream's own tool name through the supervised pool, pass the
 * result through whole, save what the pool redacted of the source's credentials (mcp-redaction.ts).
 */
import { isGatewayError } from '@gateway/core';
import { toAbortSignal } from '@gateway/runtime';
import type { McpIndexedTool } from '../publications/registry.js';
import type { ToolCallContext, ToolCallOutcome, ToolContent, ToolResult } from './tool-call.js';
import type { McpUpstreamPool } from './mcp-upstream.js';

function errorResult(message: string): ToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

const OUTCOME_BY_CODE: Record<string, ToolCallOutcome['outcome']> = {
  MCP_UPSTREAM_TIMEOUT: 'timeout',
  MCP_RESPONSE_TOO_LARGE: 'too-large',
  MCP_RESULT_CARRIES_CREDENTIAL: 'credential-echoed',
  MCP_SECRET_MISSING: 'credentials',
  SSRF_ADDRESS_REFUSED: 'refused',
  MCP_CALL_CANCELLED: 'cancelled',
  // A per-person source: the person's link is gone (revoked, unlinked) or the provider failed the refresh.
  PERSON_LOGIN_NOT_LINKED: 'credentials',
  PERSON_LOGIN_FAILED: 'credentials',
};

export async function executeMcpTool(
  pool: McpUpstreamPool | undefined,
  tool: McpIndexedTool,
  argumentsValue: unknown,
  context: ToolCallContext,
): Promise<ToolCallOutcome> {
  const started = performance.now();
  // The login a receipt records: a per-person source's `<source>/mcp sub=<sub>`; none for the gateway's own.
  let loginId: string | null = null;
  const finish = (result: ToolResult, outcome: ToolCallOutcome['outcome']): ToolCallOutcome => ({
    result,
    outcome,
    loginId,
    durationMs: performance.now() - started,
  });
  const argumentsObject = (argumentsValue ?? {}) as Record<string, unknown>;
  if (!pool)
    return finish(errorResult(`cannot call ${tool.name}: no MCP upstream is configured for source '${tool.sourceName}'`), 'network');
  try {
    const upstream = await pool.callTool(tool.sourceName, tool.mcpTool.name, argumentsObject, {
      ...(context.signal ? { signal: toAbortSignal(context.signal) } : {}),
      ...(context.onProgress ? { onProgress: context.onProgress } : {}),
      ...(context.trace ? { meta: context.trace } : {}),
      ...(context.person === undefined ? {} : { person: context.person }),
      onLogin: (login) => {
        loginId = login;
      },
    });
    const result: ToolResult = { content: upstream.content as ToolContent[] };
    if (upstream.structuredContent !== undefined) result.structuredContent = upstream.structuredContent;
    if (upstream.isError === true) result.isError = true;
    return finish(result, upstream.isError === true ? 'upstream-error' : 'ok');
  } catch (error) {
    const code = isGatewayError(error) ? error.code : 'MCP_UPSTREAM_FAILED';
    const message = (error as Error)?.message ?? String(error);
    return finish(errorResult(`${tool.name} failed: ${code}: ${message}`), OUTCOME_BY_CODE[code] ?? 'network');
  }
}
