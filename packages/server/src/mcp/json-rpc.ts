/**
 * The JSON-RPC edges of `/mcp`: the body parser (depth-checked before JSON.parse), the error replies written
 * before the SDK is reached, and reading a `tools/call` from the body exactly as the client sent it.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { BUSY_RETRY_AFTER_SECONDS, databaseBusyError } from '../store/sqlite/database.js';
import { exceedsJsonDepth } from './json-depth.js';

/**
 * Deepest nesting of arrays and objects accepted in an `/mcp` body (the JSON-RPC envelope counts: a tool's
 * arguments sit at level 3). Deeper bodies are refused before anything recursive (the SDK's schema parsing,
 * argument validation, serialisation) touches them, which would otherwise overflow the stack.
 */
export const MAX_MCP_BODY_DEPTH = 128;

export const INVALID_JSON = Symbol('invalid JSON body');
export const TOO_DEEP = Symbol('JSON body nested too deeply');

/** A JSON-RPC error answer without an id (the request was refused before its id was read). */
export function jsonRpcError(reply: FastifyReply, status: number, code: number, message: string, headers: Record<string, string> = {}) {
  return reply
    .code(status)
    .headers({ 'content-type': 'application/json', ...headers })
    .send({ jsonrpc: '2.0', error: { code, message }, id: null });
}

/**
 * A database still busy after the wait bound (DATABASE_BUSY): HTTP 503 with `Retry-After` and a JSON-RPC error
 * body, as for every other transient refusal of /mcp, so clients retry instead of treating it as a failure.
 */
export function databaseBusyJsonRpcText(id: unknown, cause: unknown): string {
  const message = `Service Unavailable: ${databaseBusyError(cause).message}`;
  return JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error: { code: -32000, message, data: { code: 'DATABASE_BUSY' } } });
}

export function writeDatabaseBusy(response: ServerResponse, id: unknown, cause: unknown): void {
  response.writeHead(503, { 'content-type': 'application/json', 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) });
  response.end(databaseBusyJsonRpcText(id, cause));
}

export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The tool name, arguments and retry state of a `tools/call` request body (as sent); undefined for any other body. */
export function toolsCallOf(body: unknown): { name: string; argumentsValue: unknown; requestState: string | undefined } | undefined {
  if (!isJsonObject(body) || body.method !== 'tools/call' || !isJsonObject(body.params)) return undefined;
  const name = body.params.name;
  if (typeof name !== 'string') return undefined;
  const requestState = typeof body.params.requestState === 'string' ? body.params.requestState : undefined;
  return { name, argumentsValue: sentArguments(body, body.id, name, body.params.arguments) ?? {}, requestState };
}

/**
 * The `tools/call` arguments exactly as the client sent them. The SDK parses `arguments` as a record, which
 * skips a `__proto__` key; argument names come from documents, so the gateway reads them from the body itself
 * when it is this very request (same id and tool name).
 */
export function sentArguments(body: unknown, id: unknown, name: string, parsed: unknown): unknown {
  if (!isJsonObject(body) || body.method !== 'tools/call' || body.id !== id) return parsed;
  const params = body.params;
  if (!isJsonObject(params) || params.name !== name || !isJsonObject(params.arguments)) return parsed;
  return params.arguments;
}

/** Parses `/mcp` bodies itself, so malformed JSON is a JSON-RPC parse error (-32700), not Fastify's own 400. */
export function installJsonBodyParser(fastify: FastifyInstance, maxRequestBytes: number): void {
  fastify.removeContentTypeParser(['application/json']);
  fastify.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: maxRequestBytes }, (_request, body, done) => {
    try {
      // A cheap scan of the raw text, before JSON.parse and everything after it.
      if (exceedsJsonDepth(body as string, MAX_MCP_BODY_DEPTH)) done(null, TOO_DEEP);
      else done(null, JSON.parse(body as string));
    } catch {
      done(null, INVALID_JSON);
    }
  });
}
