/**
 * The fast path's serving (mcp/fast-path.ts parses and encodes): a plain `tools/call` or `tools/list` of either
 * era, the 2025-11-25 `initialize` and `notifications/initialized`, answered without the SDK's per-request
 * machinery when they would succeed.
 */
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import { ProtocolErrorCode } from '@modelcontextprotocol/server';
import { Cancellation } from '@gateway/runtime';
import type { CallAnswer, CallDecision, CallPipeline } from '../calls/pipeline.js';
import type { McpCaller } from '../calls/caller.js';
import type { PublicationRegistry } from '../publications/registry.js';
import { isDatabaseBusy } from '../store/sqlite/database.js';
import {
  encodeModernResult,
  legacyCallToolResult,
  legacyInitializeResultText,
  legacyToolsListResultText,
  modernCallToolResult,
  writeJsonRpcResult,
  writeJsonRpcText,
  writeToolsListResult,
  type FastRequest,
} from './fast-path.js';
import { writeDatabaseBusy } from './json-rpc.js';
import { SERVER_CAPABILITIES } from './sdk-server.js';
import { decodeCursor, listToolsPage } from './tools.js';

export interface FastServerOptions {
  registry: PublicationRegistry;
  pipeline: CallPipeline;
  logger: FastifyBaseLogger;
  serverInfo: { name: string; version: string };
  pageSize: number;
  listTtlMs: number;
  onFastPathServed?: (method: FastRequest['method']) => void;
}

export type ServeFast = (fast: FastRequest, caller: McpCaller, reply: FastifyReply, decided: CallDecision | undefined) => Promise<boolean>;

export function createFastServer(options: FastServerOptions): ServeFast {
  const { registry, pipeline, logger, serverInfo, pageSize } = options;
  const listCacheHint = { ttlMs: options.listTtlMs, cacheScope: 'private' as const };

  /**
   * Serves a fast-path request when it would succeed; returns false (nothing written) when the SDK
   * must answer it instead: an invalid cursor, a tool the caller may not call, a session that ended, a
   * 2025-11-25 call of an MCP source's tool (its blocks pass through whole, and the SDK's era schema
   * reorders and strips their members: only the SDK knows that schema exactly).
   */
  async function serveFast(fast: FastRequest, caller: McpCaller, reply: FastifyReply, decided: CallDecision | undefined): Promise<boolean> {
    if (fast.method === 'notifications/initialized') {
      // The SDK's stateless legacy transport accepts a notification with an empty 202 and nothing else.
      options.onFastPathServed?.(fast.method);
      reply.hijack();
      reply.raw.writeHead(202, {});
      reply.raw.end();
      return true;
    }
    if (fast.method === 'initialize') {
      options.onFastPathServed?.(fast.method);
      reply.hijack();
      // 2025-11-25 requests on the fast path are answered as JSON, not SSE (mcp/fast-path.ts says why).
      writeJsonRpcText(reply.raw, legacyInitializeResultText(fast.id, fast.protocolVersion, SERVER_CAPABILITIES, serverInfo));
      return true;
    }
    const snapshot = registry.snapshot();
    if (fast.method === 'tools/list') {
      if (fast.cursor) {
        try {
          decodeCursor(fast.cursor);
        } catch {
          return false;
        }
      }
      const page = listToolsPage(snapshot, registry, caller, fast.cursor, pageSize);
      // The 2025-11-25 codec rewrites tools with an `outputSchema` (none today): the SDK lists those.
      if (fast.era === 'legacy' && page.tools.some((tool) => Object.hasOwn(tool, 'outputSchema'))) return false;
      options.onFastPathServed?.(fast.method);
      reply.hijack();
      if (fast.era === 'modern') writeToolsListResult(reply.raw, fast.id, page, serverInfo, listCacheHint);
      else writeJsonRpcText(reply.raw, legacyToolsListResultText(fast.id, page));
      return true;
    }
    // A call the pipeline would refuse goes to the SDK, which answers (and receipts) it: the SDK stays
    // the single author of protocol errors, and refusals are rare enough not to need the fast path.
    // The re-approval check already decided this very call (one session lookup fewer per call).
    // A tool reviewed `approval: each-call` is the SDK's too: its call is bound to its arguments and an approval.
    if (snapshot.tools.get(fast.name)?.entry.approval === 'each-call') return false;
    const deciding = decided?.name === fast.name ? decided : pipeline.decide(caller, fast.name);
    const decision = deciding instanceof Promise ? await deciding : deciding;
    if (decision.verdict.kind !== 'allow') return false;
    if (fast.era === 'legacy' && decision.tool?.kind === 'mcp') return false;
    options.onFastPathServed?.(fast.method);
    reply.hijack();
    const response = reply.raw;
    // The client going away cancels the upstream request, as the SDK's request signal does.
    const cancel = new Cancellation();
    const onClose = () => {
      if (!response.writableFinished) cancel.abort();
    };
    response.once('close', onClose);
    let body: Record<string, unknown>;
    try {
      const { answer } = await pipeline.callTool(caller, fast.name, fast.arguments ?? {}, cancel, decision);
      // An allowed decision always ends in a tool result (refusals are decided above).
      const result = (answer as Extract<CallAnswer, { kind: 'result' }>).result;
      body = fast.era === 'legacy' ? legacyCallToolResult(result) : encodeModernResult(modernCallToolResult(result), serverInfo);
    } catch (error) {
      // What the SDK answers for a handler that throws: an in-band internal error.
      logger.error({ tool: fast.name, error: (error as Error).message }, 'tool call failed');
      response.off('close', onClose);
      if (!response.destroyed && !response.headersSent && isDatabaseBusy(error)) {
        writeDatabaseBusy(response, fast.id, error);
        return true;
      }
      if (!response.destroyed) {
        const code = ProtocolErrorCode.InternalError;
        writeJsonRpcText(
          response,
          JSON.stringify({ jsonrpc: '2.0', id: fast.id, error: { code, message: (error as Error).message ?? 'Internal error' } }),
        );
      }
      return true;
    }
    response.off('close', onClose);
    if (!cancel.aborted && !response.destroyed) writeJsonRpcResult(response, fast.id, body);
    return true;
  }

  return serveFast;
}
