/**
 * The SDK side of `/mcp`: the `Server` of one request (tools/list and tools/call over the index and the call
 * pipeline), and the encoding of "a person must act first" for the request's era.
 */
import type { FastifyBaseLogger } from 'fastify';
import {
  CLIENT_CAPABILITIES_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type AuthInfo,
  type CallToolResult,
  type ListToolsResult,
  type McpRequestContext,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { CallAnswer, CallPipeline } from '../calls/pipeline.js';
import type { McpCaller } from '../calls/caller.js';
import type { PublicationRegistry } from '../publications/registry.js';
import { sentArguments } from './json-rpc.js';
import { progressForwarder } from './progress.js';
import { listToolsPage } from './tools.js';

/** What the gateway's MCP server offers (the SDK's `Server` and the fast path's `initialize` answer share it). */
export const SERVER_CAPABILITIES = { tools: { listChanged: true } };

export interface CallerAuthInfo extends AuthInfo {
  /** `body`: the POST body as JSON.parse read it, for the arguments the SDK's schema parsing would alter. */
  extra: { caller: McpCaller; body?: unknown };
}

/**
 * "A person must act first", encoded for the era of the request (docs/server.md › A person must act first).
 * 2026-07-28 with the `elicitation.url` capability in the request's envelope: an `input_required` result
 * whose one input request is a URL elicitation, and the `requestState` the retry echoes. 2025-11-25, and
 * 2026-07-28 clients without that capability: the URL-elicitation-required error (-32042) naming the same
 * URL; the client retries once the person is done. A re-approval that reached the SDK (no step-up challenge
 * configured) stays the in-band -32602 "approve it again".
 */
export function encodePersonAction(answer: Extract<CallAnswer, { kind: 'act' }>, context: ServerContext): CallToolResult {
  if (answer.action.kind !== 'visit') throw new ProtocolError(ProtocolErrorCode.InvalidParams, answer.message);
  const elicitation = { mode: 'url' as const, message: answer.message, url: answer.action.url, elicitationId: answer.elicitationId! };
  const envelope = context.mcpReq.envelope;
  const capabilities = (envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
    | { elicitation?: { url?: unknown } }
    | undefined;
  if (envelope !== undefined && capabilities?.elicitation?.url !== undefined) {
    // 2026-07-28: the input request's key is its id (the era's embedded URL elicitation has no elicitationId).
    const { elicitationId, ...params } = elicitation;
    return {
      resultType: 'input_required',
      inputRequests: { [elicitationId]: { method: 'elicitation/create', params } },
      requestState: answer.requestState!,
    } as unknown as CallToolResult;
  }
  // Not a ProtocolError: the SDK turns a thrown UrlElicitationRequiredError into an internal error on the
  // 2026-07-28 era; an error carrying the code and data is sent as they are, in both eras.
  throw Object.assign(new Error(answer.message), { code: ProtocolErrorCode.UrlElicitationRequired, data: { elicitations: [elicitation] } });
}

export interface McpServerFactoryOptions {
  registry: PublicationRegistry;
  pipeline: CallPipeline;
  logger: FastifyBaseLogger;
  serverInfo: { name: string; version: string };
  pageSize: number;
  listTtlMs: number;
}

/**
 * The SDK `Server` of one `/mcp` request: `tools/list` and `tools/call` over the index and the call pipeline.
 * Exported so the tests can serve the very same handlers through an SDK transport set up differently (the
 * fast path's 2025-11-25 JSON answers are compared with the SDK transport's own, mcp/fast-path.test.ts).
 */
export function mcpServerFactory(options: McpServerFactoryOptions): (context: McpRequestContext) => Server {
  const { registry, pipeline, logger, serverInfo, pageSize, listTtlMs } = options;
  return (context: McpRequestContext): Server => {
    const caller = (context.authInfo as CallerAuthInfo | undefined)?.extra?.caller;
    const body = (context.authInfo as CallerAuthInfo | undefined)?.extra?.body;
    if (!caller) throw new Error('an /mcp request reached the MCP layer without an authenticated caller');
    // The snapshot this request works on: a reload during the call does not change it.
    const snapshot = registry.snapshot();
    const server = new Server(serverInfo, {
      capabilities: SERVER_CAPABILITIES,
      cacheHints: {
        // MCP 2026-07-28 Caching: the list depends on the session, so it must never be shared.
        'tools/list': { ttlMs: listTtlMs, cacheScope: 'private' },
        'server/discover': { ttlMs: listTtlMs, cacheScope: 'private' },
      },
    });
    server.setRequestHandler('tools/list', async (request) => {
      return listToolsPage(snapshot, registry, caller, request.params?.cursor, pageSize) as ListToolsResult;
    });
    server.setRequestHandler('tools/call', async (request, handlerContext) => {
      const name = request.params.name;
      const argumentsValue = sentArguments(body, handlerContext.mcpReq.id, name, request.params.arguments);
      const progress = progressForwarder(handlerContext, (error) =>
        logger.debug({ tool: name, error: error.message }, 'progress not delivered'),
      );
      const requestState = handlerContext.mcpReq.requestState();
      const { answer } = await pipeline.callTool(
        caller,
        name,
        argumentsValue ?? {},
        handlerContext.mcpReq.signal,
        undefined,
        progress.onProgress,
        typeof requestState === 'string' ? requestState : undefined,
      );
      await progress.settled();
      // MCP Tools › Error Handling: unknown tools (and tools outside the session) are a protocol error (-32602).
      if (answer.kind === 'invalid-params') throw new ProtocolError(ProtocolErrorCode.InvalidParams, answer.message);
      if (answer.kind === 'act') return encodePersonAction(answer, handlerContext);
      // The SDK's era codec: on 2025-11-25 a non-object structuredContent is wrapped as { result }.
      return server.projectCallToolResult(answer.result as CallToolResult, undefined);
    });
    return server;
  };
}
