/** MCP sources in core: normalisation and fingerprints (docs/sources-mcp.md). */
export {
  MCP_TOOL_NAME_PATTERN,
  MCP_UNSUPPORTED_REASON_CODES,
  MCP_TOOL_PREFIX_SEPARATOR,
  mcpFingerprintOf,
  mcpGatewayToolName,
  normaliseMcpTool,
  normaliseMcpTools,
  type ImportedMcpTools,
  type ListedMcpTool,
  type McpToolShape,
} from './normalise.js';
