/**
 * The hot path of `/mcp`: `tools/call` and `tools/list` requests of both eras that pass every check the SDK
 * makes are answered here, from the index, without the SDK's per-request machinery (a web `Request` built
 * from the Node request, a fresh `Server`, a per-request transport, zod validation of messages we build
 * ourselves, a web `Response` copied back to Node), and so is the 2025-11-25 handshake (`initialize`,
 * `notifications/initialized`). Everything else — other methods and notifications, and every request that
 * would be refused or answered with an error — goes through the SDK, which stays the single author of
 * protocol errors.
 *
 * The selection is deliberately narrower than what the SDK accepts, so the fast path can only ever agree
 * with it:
 *
 * - 2026-07-28: the SDK's own classifier (`classifyInboundRequest`) routes the request to the modern era
 *   with no rejection AND the standard headers are present and equal to the body (the SDK's
 *   `validateStandardRequestHeaders` rules: `MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for
 *   `tools/call`; a Base64 `=?base64?…?=` sentinel is left to the SDK) AND the params hold nothing but the
 *   members this gateway reads. The answer follows the SDK's 2026-07-28 encode rules (`resultType`,
 *   `ttlMs`/`cacheScope` on lists, `serverInfo` in `_meta`), written as JSON as the SDK's Node adapter does.
 * - 2025-11-25 (what SDK 1.x clients such as mcp-remote send after a stateless `initialize`): the
 *   classifier routes it to the legacy era, no `_meta` and no SEP-2243 header, `MCP-Protocol-Version`
 *   absent or `2025-11-25`, and an `Accept` the SDK's transport accepts (both `application/json` and
 *   `text/event-stream`); for `initialize`, the shape SDK 1.x clients send. A notification gets the empty
 *   202 the SDK's stateless legacy transport gives it. A request is answered with one `application/json`
 *   body, where the SDK's stateless legacy serving would open an SSE stream for it: MCP 2025-11-25 ›
 *   Transports › Streamable HTTP › Sending Messages to the Server, item 5: "If the input is a JSON-RPC
 *   request, the server MUST either return Content-Type: text/event-stream, to initiate an SSE stream, or
 *   Content-Type: application/json, to return one JSON object. The client MUST support both these cases."
 *   The SDK 1.x client reads an SSE answer through web streams and an SSE parser, which costs it more CPU
 *   than a JSON body (figures: docs/performance.md, "`/mcp` fast path"); and none of these requests has anything to send before
 *   its answer (a call with a progress token has, and goes to the SDK, which streams it). The answers are
 *   the bytes of the SDK's own transport configured for JSON answers (`WebStandardStreamableHTTPServerTransport`
 *   with `enableJsonResponse: true`), which `mcp/fast-path.test.ts` compares them with.
 */
import type { ServerResponse } from 'node:http';
import {
  classifyInboundRequest,
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  isInitializeRequest,
  isJsonContentType,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
} from '@modelcontextprotocol/server';
import { exactListedToolJson, type ListedTool } from '../publications/registry.js';

/** The modern revision the fast path answers (mcp/fast-path.test.ts proves the SDK serves it the same way). */
export const FAST_PATH_REVISION = '2026-07-28';

/** The legacy revision the fast path answers (SDK 1.x clients negotiate it; older ones go to the SDK). */
export const LEGACY_FAST_PATH_REVISION = '2025-11-25';

/**
 * The interval of the SDK's SSE keep-alive comments (its `DEFAULT_SSE_KEEP_ALIVE_MS`, which is not
 * exported); the plugin passes it to `createMcpHandler`, whose 2025-11-25 answers stay SSE streams.
 */
export const DEFAULT_SSE_KEEP_ALIVE_MS = 15_000;

/** `_meta` members of a request envelope the fast path accepts (others, e.g. logLevel, go to the SDK). */
const ENVELOPE_KEYS = new Set<string>([PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY]);

/** The era a fast-path request belongs to: it decides the encoding and the framing of the answer. */
export type FastEra = 'modern' | 'legacy';

export type FastRequest =
  | { era: FastEra; method: 'tools/call'; id: string | number; name: string; arguments: Record<string, unknown> | undefined }
  | { era: FastEra; method: 'tools/list'; id: string | number; cursor: string | undefined }
  | { era: 'legacy'; method: 'initialize'; id: string | number; protocolVersion: typeof LEGACY_FAST_PATH_REVISION }
  | { era: 'legacy'; method: 'notifications/initialized' };

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
 * The request, when it is a plain `tools/call` or `tools/list` (either era) or a 2025-11-25
 * `notifications/initialized` the SDK would dispatch to our handler unchanged; otherwise undefined (the SDK
 * answers it).
 */
export function fastRequestOf(httpMethod: string, headers: Headers, body: unknown): FastRequest | undefined {
  if (httpMethod !== 'POST' || !isPlainObject(body) || body.jsonrpc !== '2.0') return undefined;
  if (!isJsonContentType(singleHeader(headers, 'content-type') ?? null)) return undefined;
  const method = body.method;
  if (method === 'notifications/initialized') {
    if (!hasOnlyKeys(body, ['jsonrpc', 'method']) || !isLegacyExchange(headers)) return undefined;
    return isLegacyRoute(method, headers) ? { era: 'legacy', method } : undefined;
  }
  if (method !== 'tools/call' && method !== 'tools/list' && method !== 'initialize') return undefined;
  const id = body.id;
  if (!(typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)))) return undefined;
  if (!hasOnlyKeys(body, ['jsonrpc', 'id', 'method', 'params'])) return undefined;

  const params = body.params;
  if (method === 'initialize') return legacyInitializeOf(id, params, headers);
  // No `_meta` at all: a 2025-11-25 request (a `_meta`, e.g. a progress token, is left to the SDK there).
  if (params === undefined || (isPlainObject(params) && !Object.hasOwn(params, '_meta')))
    return legacyRequestOf(method, id, params, headers);
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
    request = { era: 'modern', method, id, name, arguments: argumentsValue };
  } else {
    const cursor = params.cursor;
    if (!hasOnlyKeys(params, ['cursor', '_meta']) || (cursor !== undefined && typeof cursor !== 'string')) return undefined;
    if (nameHeader !== undefined) return undefined;
    request = { era: 'modern', method, id, cursor };
  }

  return isServedEnvelope(method, meta) ? request : undefined;
}

/**
 * The headers of a 2025-11-25 exchange the SDK's stateless legacy transport serves without complaint:
 * `MCP-Protocol-Version` absent (the transport then assumes the negotiated default) or exactly
 * `2025-11-25`, none of the 2026-07-28 standard headers, and an `Accept` naming both media types (the
 * transport's own substring test; anything else is its 406).
 */
function isLegacyExchange(headers: Headers): boolean {
  const version = headers['mcp-protocol-version'];
  if (version !== undefined && version !== LEGACY_FAST_PATH_REVISION) return false;
  if (headers['mcp-method'] !== undefined || headers['mcp-name'] !== undefined) return false;
  const accept = headers.accept;
  return typeof accept === 'string' && accept.includes('application/json') && accept.includes('text/event-stream');
}

function legacyRequestOf(
  method: 'tools/call' | 'tools/list',
  id: string | number,
  params: Record<string, unknown> | undefined,
  headers: Headers,
): FastRequest | undefined {
  if (!isLegacyExchange(headers)) return undefined;
  let request: FastRequest;
  if (method === 'tools/call') {
    if (params === undefined) return undefined;
    const name = params.name;
    const argumentsValue = params.arguments;
    if (typeof name !== 'string' || !hasOnlyKeys(params, ['name', 'arguments'])) return undefined;
    if (argumentsValue !== undefined && !isPlainObject(argumentsValue)) return undefined;
    request = { era: 'legacy', method, id, name, arguments: argumentsValue };
  } else {
    const cursor = params?.cursor;
    if ((params !== undefined && !hasOnlyKeys(params, ['cursor'])) || (cursor !== undefined && typeof cursor !== 'string'))
      return undefined;
    request = { era: 'legacy', method, id, cursor };
  }
  return isLegacyRoute(method, headers) ? request : undefined;
}

/** The SDK's verdicts on `initialize` capabilities seen so far (clients send the same ones every time). */
const capabilitiesVerdicts = new Map<string, boolean>();
const CAPABILITIES_VERDICT_LIMIT = 256;

/**
 * A 2025-11-25 `initialize` of the shape SDK 1.x clients send: `protocolVersion` exactly `2025-11-25` (the
 * answer echoes it; older revisions go to the SDK), `clientInfo` with a string name and version (and
 * title), and capabilities the SDK's own `isInitializeRequest` schema accepts (asked once per distinct
 * capabilities object). The answer depends on nothing else.
 */
function legacyInitializeOf(id: string | number, params: unknown, headers: Headers): FastRequest | undefined {
  if (!isPlainObject(params) || !hasOnlyKeys(params, ['protocolVersion', 'capabilities', 'clientInfo'])) return undefined;
  if (params.protocolVersion !== LEGACY_FAST_PATH_REVISION || !isLegacyExchange(headers)) return undefined;
  const { capabilities, clientInfo } = params;
  if (!isPlainObject(capabilities) || !isPlainObject(clientInfo) || !hasOnlyKeys(clientInfo, ['name', 'version', 'title']))
    return undefined;
  if (typeof clientInfo.name !== 'string' || typeof clientInfo.version !== 'string') return undefined;
  if (clientInfo.title !== undefined && typeof clientInfo.title !== 'string') return undefined;
  const key = JSON.stringify(capabilities);
  let verdict = capabilitiesVerdicts.get(key);
  if (verdict === undefined) {
    verdict = isInitializeRequest({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: LEGACY_FAST_PATH_REVISION, capabilities, clientInfo: { name: 'probe', version: '1' } },
    });
    if (capabilitiesVerdicts.size >= CAPABILITIES_VERDICT_LIMIT) capabilitiesVerdicts.clear();
    capabilitiesVerdicts.set(key, verdict);
  }
  return verdict && isLegacyRoute('initialize', headers)
    ? { era: 'legacy', method: 'initialize', id, protocolVersion: LEGACY_FAST_PATH_REVISION }
    : undefined;
}

/** The SDK classifier's verdicts for claim-less messages, per method and protocol-version header. */
const legacyVerdicts = new Map<string, boolean>();

/**
 * Whether the SDK's own classifier routes a claim-less message with this method (and this
 * `MCP-Protocol-Version`, absent or 2025-11-25 once `isLegacyExchange` passed) to its legacy serving. Its
 * verdict on such a message depends on nothing else, so it is asked once per combination.
 */
function isLegacyRoute(method: 'tools/call' | 'tools/list' | 'initialize' | 'notifications/initialized', headers: Headers): boolean {
  const version = headers['mcp-protocol-version'] as string | undefined;
  const key = `${method}\n${version ?? ''}`;
  let verdict = legacyVerdicts.get(key);
  if (verdict === undefined) {
    const body =
      method === 'notifications/initialized'
        ? { jsonrpc: '2.0', method }
        : method === 'initialize'
          ? {
              jsonrpc: '2.0',
              id: 1,
              method,
              params: { protocolVersion: LEGACY_FAST_PATH_REVISION, capabilities: {}, clientInfo: { name: 'probe', version: '1' } },
            }
          : { jsonrpc: '2.0', id: 1, method, params: method === 'tools/call' ? { name: 'probe' } : {} };
    const route = classifyInboundRequest({
      httpMethod: 'POST',
      ...(version === undefined ? {} : { protocolVersionHeader: version }),
      body,
    });
    verdict = route.kind === 'legacy';
    legacyVerdicts.set(key, verdict);
  }
  return verdict;
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
export function modernCallToolResult(result: {
  content: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
}): Record<string, unknown> {
  const structured = result.structuredContent;
  let content = result.content;
  if (structured !== undefined && (typeof structured !== 'object' || structured === null || Array.isArray(structured))) {
    if (!content.some((block) => (block as { type?: unknown }).type === 'text'))
      content = [...content, { type: 'text', text: JSON.stringify(structured) }];
  }
  return {
    content,
    ...(structured === undefined ? {} : { structuredContent: structured }),
    ...(result.isError === undefined ? {} : { isError: result.isError }),
  };
}

/**
 * A tools/call result as the SDK's 2025-11-25 codec projects and validates it: the same text block for a
 * non-object `structuredContent`, which is then wrapped as `{ result }` (the era's structuredContent is an
 * object); the CallToolResult schema's member order; and a top-level `__proto__` member of
 * `structuredContent` dropped, as its record schema drops it. The blocks are the executor's own text and
 * embedded-resource blocks, already in the schema's member order (results of MCP sources, passed through
 * whole, are left to the SDK: see the plugin).
 */
export function legacyCallToolResult(result: {
  content: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
}): Record<string, unknown> {
  let structured = result.structuredContent;
  let content = result.content;
  if (structured !== undefined) {
    if (typeof structured !== 'object' || structured === null || Array.isArray(structured)) {
      if (!content.some((block) => (block as { type?: unknown }).type === 'text'))
        content = [...content, { type: 'text', text: JSON.stringify(structured) }];
      structured = { result: structured };
    } else if (Object.hasOwn(structured, '__proto__')) {
      const copy: Record<string, unknown> = {};
      for (const key of Object.keys(structured)) if (key !== '__proto__') copy[key] = (structured as Record<string, unknown>)[key];
      structured = copy;
    }
  }
  return {
    content,
    ...(structured === undefined ? {} : { structuredContent: structured }),
    ...(result.isError === undefined ? {} : { isError: result.isError }),
  };
}

/**
 * The JSON-RPC text of the SDK's answer to a 2025-11-25 `initialize` (`Server._oninitialize`): the requested
 * revision (it is one the SDK serves), the server's capabilities and identity; no instructions are set.
 */
export function legacyInitializeResultText(
  id: string | number,
  protocolVersion: string,
  capabilities: Record<string, unknown>,
  serverInfo: { name: string; version: string },
): string {
  return JSON.stringify({ result: { protocolVersion, capabilities, serverInfo }, jsonrpc: '2.0', id });
}

/** Writes a JSON-RPC result the way the SDK's Node adapter writes its JSON answers. */
export function writeJsonRpcResult(response: ServerResponse, id: string | number, result: Record<string, unknown>): void {
  writeJsonRpcText(response, JSON.stringify({ result, jsonrpc: '2.0', id }));
}

/**
 * Writes a JSON-RPC message (its JSON text) as one `application/json` answer: the bytes of the SDK's Node
 * adapter writing the SDK's JSON `Response` (`Response.json(message, { headers: { 'Content-Type': … } })`,
 * one chunk, then the end), in both eras.
 */
export function writeJsonRpcText(response: ServerResponse, text: string): void {
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
  return pageText(id, tools, JSON.stringify(encodeModernResult(rest, serverInfo, cacheHint)));
}

/**
 * The JSON-RPC text of a 2025-11-25 `tools/list` answer: the page as the handler returns it (the era's
 * codec adds nothing to a list whose tools have no `outputSchema`; the plugin leaves others to the SDK).
 */
export function legacyToolsListResultText(id: string | number, page: { tools: readonly object[]; nextCursor?: string }): string {
  const { tools, ...rest } = page;
  return pageText(id, tools, JSON.stringify(rest));
}

/** `{"result":{"tools":[…],<tail members>},"jsonrpc":"2.0","id":…}` with each tool's JSON reused. */
function pageText(id: string | number, tools: readonly object[], tail: string): string {
  const parts = new Array<string>(tools.length);
  for (let index = 0; index < tools.length; index += 1) parts[index] = toolJson(tools[index]!);
  // `{"tools":[…]` then the remaining members exactly as JSON.stringify orders them (tools came first).
  const result = tail === '{}' ? `{"tools":[${parts.join(',')}]}` : `{"tools":[${parts.join(',')}],${tail.slice(1)}`;
  return `{"result":${result},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`;
}
