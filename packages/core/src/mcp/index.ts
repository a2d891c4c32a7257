/** MCP sources in core: normalisation and fingerprints (docs/sources-mcp.md). */
export * from './normalise.js';
