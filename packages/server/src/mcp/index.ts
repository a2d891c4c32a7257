/** The /mcp area: the Fastify plugin, the Origin guard in front of it, and the authorizer contract it calls. */
export type { McpAuthentication, McpAuthorizer, McpCaller } from '../calls/caller.js';
export { createOriginGuard } from './origin.js';
export { createMcpPlugin, DEFAULT_MAX_REQUEST_BYTES } from './plugin.js';
