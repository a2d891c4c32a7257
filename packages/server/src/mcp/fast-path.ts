/**
 * The hot path of `/mcp`: 2026-07-28 `tools/call` and `tools/list` requests that pass every check the SDK
 * makes are answered here, from the index, without the SDK's per-request machinery (a web `Request` built
 * from the Node request, a fresh `Server`, a per-request transport, zod validation of messages we build
 * ourselves, a web `Response` copied back to Node). Everything else — other methods, the 2025-11-25 era,
 * notifications, and every request that would be refused or answered with an error — goes through the SDK,
 * which stays the single author of protocol errors.
 *
 * The selection is deliberately narrower than what the SDK accepts: a request is taken only when the
 * SDK's own classifier (`classifyInboundRequest`) routes it to the modern era with no rejection AND the
 * standard headers are present and equal to the body (the SDK's `validateStandardRequestHeaders` rules:
 * `MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for `tools/call`; a Base64 `=?base64?…?=` sentinel is
 * left to the SDK) AND the params hold nothing but the members this gateway reads. Anything unusual takes
 * the SDK path, so the fast path can only ever agree with it. The answer is built by the SDK's 2026-07-28
 * encode rules (`resultType`, `ttlMs`/`cacheScope` on lists, `serverInfo` in `_meta`) and written as the
 * SDK's Node adapter writes a JSON answer (`tests: mcp/fast-path.test.ts` compares both paths).
 */
import type { ServerResponse } from 'node:http';
import {
  classifyInboundRequest,
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  isJsonContentType,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
} from '@modelcontextprotocol/server';
import { exactListedToolJson, type ListedTool } from '../publications/registry.js';

/** The modern revision the fast path answers (mcp/fast-path.test.ts proves the SDK serves it the same way). */
export const FAST_PATH_REVISION = '2026-07-28';

/** `_meta` members of a request envelope the fast path accepts (others, e.g. logLevel, go to the SDK). */
const ENVELOPE_KEYS = new Set<string>([PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY]);

export type FastRequest =
  | { method: 'tools/call'; id: string | number; name: string; arguments: Record<string, unknown> | undefined }
  | { method: 'tools/list'; id: string | number; cursor: string | undefined };

type Headers = Record<string, string | string[] | undefined>;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A header present exactly once (Node joins repeated custom headers; arrays only for set-cookie). */
function singleHeader(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** RFC 9110 §5.5: optional whitespace around a field value is not part of it (the SDK strips it too). */
function withoutOws(value: string): string {
  return value.replace(/^[ \t]+|[ \t]+$/g, '');
}

function hasOnlyKeys(object: Record<string, unknown>, allowed: readonly string[]): boolean {
  for (const key in object) if (!allowed.includes(key)) return false;
  return true;
}

/**
 * The request, when it is a plain 2026-07-28 `tools/call` or `tools/list` the SDK would dispatch to our
 * handler unchanged; otherwise undefined (the SDK answers it).
 */
export function fastRequestOf(httpMethod: string, headers: Headers, body: unknown): FastRequest | undefined {
  if (httpMethod !== 'POST' || !isPlainObject(body)) return undefined;
  const method = body.method;
  if (method !== 'tools/call' && method !== 'tools/list') return undefined;
  const id = body.id;
  if (!(typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)))) return undefined;
  if (body.jsonrpc !== '2.0' || !hasOnlyKeys(body, ['jsonrpc', 'id', 'method', 'params'])) return undefined;
  if (!isJsonContentType(singleHeader(headers, 'content-type') ?? null)) return undefined;

  const params = body.params;
  if (!isPlainObject(params)) return undefined;
  const meta = params._meta;
  if (!isPlainObject(meta) || meta[PROTOCOL_VERSION_META_KEY] !== FAST_PATH_REVISION) return undefined;
  for (const key in meta) if (!ENVELOPE_KEYS.has(key)) return undefined;

  const protocolVersion = singleHeader(headers, 'mcp-protocol-version');
  const methodHeader = singleHeader(headers, 'mcp-method');
  if (protocolVersion === undefined || withoutOws(protocolVersion) !== FAST_PATH_REVISION) return undefined;
  if (methodHeader === undefined || withoutOws(methodHeader) !== method) return undefined;
  const nameHeader = singleHeader(headers, 'mcp-name');

  let request: FastRequest;
  if (method === 'tools/call') {
    const name = params.name;
    const argumentsValue = params.arguments;
    if (typeof name !== 'string' || !hasOnlyKeys(params, ['name', 'arguments', '_meta'])) return undefined;
    if (argumentsValue !== undefined && !isPlainObject(argumentsValue)) return undefined;
    // Mcp-Name must mirror params.name; an encoded (`=?base64?…?=`) value is left to the SDK to decode.
    if (nameHeader === undefined || withoutOws(nameHeader) !== name || name.startsWith('=?')) return undefined;
    request = { method, id, name, arguments: argumentsValue };
  } else {
    const cursor = params.cursor;
    if (!hasOnlyKeys(params, ['cursor', '_meta']) || (cursor !== undefined && typeof cursor !== 'string')) return undefined;
    if (nameHeader !== undefined) return undefined;
    request = { method, id, cursor };
  }

  return isServedEnvelope(method, meta) ? request : undefined;
}

/** The SDK's verdicts on envelopes seen so far (a client sends the same `_meta` on every request). */
const envelopeVerdicts = new Map<string, boolean>();
const ENVELOPE_VERDICT_LIMIT = 256;

/**
 * Whether the SDK's own classifier (`classifyInboundRequest`) routes a request with this method and
 * `_meta` to the 2026-07-28 era without a rejection. Once the headers are known to equal the body (checked
 * above), its answer depends on nothing else: it reads the method, the headers and `params._meta` only.
 * The verdict is computed once per distinct envelope (the envelope check runs a zod schema, the most
 * expensive step of the selection) by classifying a probe request carrying exactly that envelope.
 */
function isServedEnvelope(method: 'tools/call' | 'tools/list', meta: Record<string, unknown>): boolean {
  const key = `${method}\n${JSON.stringify(meta)}`;
  let verdict = envelopeVerdicts.get(key);
  if (verdict === undefined) {
    const isCall = method === 'tools/call';
    const route = classifyInboundRequest({
      httpMethod: 'POST',
      protocolVersionHeader: FAST_PATH_REVISION,
      mcpMethodHeader: method,
      ...(isCall ? { mcpNameHeader: 'probe' } : {}),
      body: { jsonrpc: '2.0', id: 1, method, params: isCall ? { name: 'probe', _meta: meta } : { _meta: meta } },
    });
    verdict = route.kind === 'modern' && route.messageKind === 'request' && route.classification.revision === FAST_PATH_REVISION;
    if (envelopeVerdicts.size >= ENVELOPE_VERDICT_LIMIT) envelopeVerdicts.clear();
    envelopeVerdicts.set(key, verdict);
  }
  return verdict;
}

/** Cache hint of a list result (MCP 2026-07-28 Caching), as the SDK's `cacheHints` option gives it. */
export interface CacheHint {
  ttlMs: number;
  cacheScope: 'public' | 'private';
}

/**
 * A handler result encoded for 2026-07-28 as the SDK's encode contract does: `resultType: "complete"`,
 * then `ttlMs`/`cacheScope` on cacheable results, then the server's identity in `_meta`.
 */
export function encodeModernResult(
  result: Record<string, unknown>,
  serverInfo: { name: string; version: string },
  cacheHint?: CacheHint,
): Record<string, unknown> {
  const encoded: Record<string, unknown> = { ...result, resultType: 'complete' };
  if (cacheHint) {
    encoded.ttlMs = cacheHint.ttlMs;
    encoded.cacheScope = cacheHint.cacheScope;
  }
  encoded._meta = { [SERVER_INFO_META_KEY]: serverInfo };
  return encoded;
}

/**
 * A tools/call result as the SDK's 2026-07-28 codec projects and validates it: a non-object
 * `structuredContent` needs a text block (added when missing), and the members come out in the order of
 * the CallToolResult schema.
 */
export function modernCallToolResult(result: { content: unknown[]; structuredContent?: unknown; isError?: boolean }): Record<string, unknown> {
  const structured = result.structuredContent;
  let content = result.content;
  if (structured !== undefined && (typeof structured !== 'object' || structured === null || Array.isArray(structured))) {
    if (!content.some((block) => (block as { type?: unknown }).type === 'text')) content = [...content, { type: 'text', text: JSON.stringify(structured) }];
  }
  return {
    content,
    ...(structured === undefined ? {} : { structuredContent: structured }),
    ...(result.isError === undefined ? {} : { isError: result.isError }),
  };
}

/** Writes a JSON-RPC result the way the SDK's Node adapter writes its JSON answers. */
export function writeJsonRpcResult(response: ServerResponse, id: string | number, result: Record<string, unknown>): void {
  writeJsonRpcText(response, JSON.stringify({ result, jsonrpc: '2.0', id }));
}

function writeJsonRpcText(response: ServerResponse, text: string): void {
  response.writeHead(200, { 'content-type': 'application/json' });
  response.write(text);
  response.end();
}

/** Each listed tool's JSON, made once per tool object (they are built once per snapshot and never changed). */
const listedToolJson = new WeakMap<object, string>();

function toolJson(tool: object): string {
  let text = listedToolJson.get(tool);
  if (text === undefined) {
    // Integer bounds beyond 2^53 are written with their exact digits (the SDK path writes their doubles).
    text = exactListedToolJson.get(tool as ListedTool) ?? JSON.stringify(tool);
    listedToolJson.set(tool, text);
  }
  return text;
}

/**
 * Writes a `tools/list` answer: the same bytes as `writeJsonRpcResult(…, encodeModernResult(page, …))`
 * (JSON.stringify of an object is context-free), with each tool's JSON reused instead of re-serialised
 * on every list: a page of 1,000 tools with their input schemas is most of the work of a list.
 */
export function writeToolsListResult(
  response: ServerResponse,
  id: string | number,
  page: { tools: readonly object[]; nextCursor?: string },
  serverInfo: { name: string; version: string },
  cacheHint: CacheHint,
): void {
  writeJsonRpcText(response, toolsListResultText(id, page, serverInfo, cacheHint));
}

/** The JSON-RPC text of a `tools/list` answer (see writeToolsListResult). */
export function toolsListResultText(
  id: string | number,
  page: { tools: readonly object[]; nextCursor?: string },
  serverInfo: { name: string; version: string },
  cacheHint: CacheHint,
): string {
  const { tools, ...rest } = page;
  const tail = JSON.stringify(encodeModernResult(rest, serverInfo, cacheHint));
  const parts = new Array<string>(tools.length);
  for (let index = 0; index < tools.length; index += 1) parts[index] = toolJson(tools[index]!);
  // `{"tools":[…]` then the remaining members exactly as JSON.stringify orders them (tools came first).
  const result = tail === '{}' ? `{"tools":[${parts.join(',')}]}` : `{"tools":[${parts.join(',')}],${tail.slice(1)}`;
  return `{"result":${result},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`;
}
