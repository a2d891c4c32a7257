import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { Agent, request as httpRequest } from 'undici';
import { createExecutor, NO_CREDENTIALS } from '../execute/index.js';
import { PublicationRegistry } from '../publications/index.js';
import { lockWith, lockedOperation, startRecordingUpstream } from '../../test/support/fixtures.js';
import { freePort } from '../../test/support/net.js';
import type { McpAuthorizer, McpCaller } from '../calls/caller.js';
import { createCallPipeline } from '../calls/pipeline.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import {
  DEFAULT_SSE_KEEP_ALIVE_MS,
  encodeModernResult,
  fastRequestOf,
  legacyCallToolResult,
  legacyToolsListResultText,
  toolsListResultText,
} from './fast-path.js';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createOriginGuard } from './origin.js';
import { createMcpPlugin } from './plugin.js';
import { type CallerAuthInfo, mcpServerFactory } from './sdk-server.js';

/**
 * The fast path must be invisible on the wire: every request below goes to two gateways over the same
 * index, upstream and session — one with the fast path, one answering everything through the SDK — and
 * the answers must be byte for byte the same (status, headers, body). The ones the fast path must take are
 * checked to have been taken; the rest must have been left to the SDK. One difference is chosen: the fast
 * path answers the 2025-11-25 requests it takes with one JSON body where the SDK's stateless legacy serving
 * opens an SSE stream (mcp/fast-path.ts says why), so those answers are compared with the SDK's own
 * transport configured for JSON answers, serving the same handlers (`startSdkJsonReference`), and their
 * JSON-RPC message with the one in the SDK gateway's SSE event.
 */

const REVISION = '2026-07-28';
const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': REVISION, 'io.modelcontextprotocol/clientCapabilities': {} };

let upstream: Awaited<ReturnType<typeof startRecordingUpstream>>;
const agent = new Agent({ connect: { timeout: 1000 } });
const registry = new PublicationRegistry();
const served: string[] = [];
let sessionOpen = true;
let sessionChecks = 0;
let fastUrl: string;
let sdkUrl: string;
/** A pair with a short SSE keep-alive interval, to see the `: keepalive` comments of a slow call. */
let fastKeepAliveUrl: string;
let sdkKeepAliveUrl: string;
const KEEP_ALIVE_MS = 120;
/** The SDK's Streamable HTTP transport with `enableJsonResponse: true` over the same handlers. */
let sdkJsonUrl: string;
let sdkJsonServer: HttpServer | undefined;
const apps: FastifyInstance[] = [];
const SERVER_INFO = { name: 'governed-tool-gateway', version: '0.1.0' };

function sessionAuthorizer(): McpAuthorizer {
  return {
    async authenticate() {
      const snapshot = registry.snapshot();
      const tools = new Map<string, string>();
      for (const name of snapshot.names) if (name !== 'not_in_session') tools.set(name, snapshot.tools.get(name)!.entry.fingerprint);
      const caller: McpCaller = {
        sessionId: 'session-1',
        subject: 'alice',
        clientId: 'client',
        tools,
        logins: new Set(),
        expiresAt: Date.now() + 60_000,
      };
      return { ok: true, caller };
    },
    sessionState: () => {
      sessionChecks += 1;
      return sessionOpen ? 'open' : 'revoked';
    },
    // The production authorizer has the re-approval challenge, so /mcp decides each call before the fast path.
    challengeStaleApproval: async () => ({
      ok: false as const,
      status: 403,
      headers: { 'www-authenticate': 'Bearer error="insufficient_scope"' },
      body: '',
    }),
  };
}

function testExecutor() {
  return createExecutor({
    credentials: { resolve: async () => NO_CREDENTIALS },
    dispatcherFor: () => agent,
    limitsFor: () => ({ connectMs: 1000, totalMs: 2000, maxResponseBytes: 100_000 }),
  });
}

/**
 * The SDK's own 2025-11-25 JSON answers: per request, a fresh SDK `Server` from the gateway's own factory
 * (same index, upstream, session and call pipeline) connected to the SDK's stateless Streamable HTTP
 * transport configured for JSON answers — what `createMcpHandler`'s legacy serving builds, plus
 * `enableJsonResponse: true` — behind the SDK's Node adapter, on a real loopback HTTP server.
 */
async function startSdkJsonReference(): Promise<string> {
  const authorizer = sessionAuthorizer();
  const logger = Fastify({ logger: false }).log;
  const pipeline = createCallPipeline({ registry, authorizer, executor: testExecutor(), receipts: undefined, logger });
  const factory = mcpServerFactory({ registry, pipeline, logger, serverInfo: SERVER_INFO, pageSize: 2, listTtlMs: 0 });
  const node = toNodeHandler({
    fetch: async (request, options) => {
      const server = factory({ era: 'legacy', ...(options?.authInfo ? { authInfo: options.authInfo } : {}), requestInfo: request });
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      try {
        return await transport.handleRequest(request, {
          ...(options?.authInfo ? { authInfo: options.authInfo } : {}),
          parsedBody: options?.parsedBody,
        });
      } finally {
        await transport.close();
        await server.close();
      }
    },
  });
  const readJson = async (request: IncomingMessage): Promise<unknown> => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  };
  const http = createServer((request, response) => {
    void (async () => {
      const body = await readJson(request);
      const authentication = await authorizer.authenticate({ headers: request.headers });
      if (!authentication.ok) throw new Error('the test authorizer always authenticates');
      const { caller } = authentication;
      const auth: CallerAuthInfo = {
        token: '',
        clientId: caller.clientId,
        scopes: [],
        expiresAt: Math.floor(caller.expiresAt / 1000),
        extra: { caller, body },
      };
      (request as { auth?: CallerAuthInfo }).auth = auth;
      await node(request, response, body);
    })().catch((error: Error) => {
      response.writeHead(599);
      response.end(error.message);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  sdkJsonServer = http;
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

async function startApp(fastPath: boolean, sseKeepAliveMs?: number): Promise<string> {
  const port = await freePort();
  const mcpUrl = `http://127.0.0.1:${port}/mcp`;
  const real = Fastify({ logger: false });
  await real.register(
    createMcpPlugin({
      authorizer: sessionAuthorizer(),
      registry,
      executor: testExecutor(),
      guard: createOriginGuard({ mcpUrl, isLoopbackListener: true, listenPort: port }),
      pageSize: 2,
      serverInfo: SERVER_INFO,
      fastPath,
      ...(sseKeepAliveMs === undefined ? {} : { sseKeepAliveMs }),
      onFastPathServed: (method) => served.push(method),
    }),
  );
  await real.listen({ host: '127.0.0.1', port });
  apps.push(real);
  return mcpUrl;
}

beforeAll(async () => {
  upstream = await startRecordingUpstream(async (request, response) => {
    if (request.path === '/array') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('[1,"two",{"three":3}]');
    } else if (request.path === '/text') {
      response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      response.end('plain words, ünïcode');
    } else if (request.path === '/broken') {
      response.writeHead(503, { 'content-type': 'application/json' });
      response.end('{"error":"down"}');
    } else if (request.path === '/binary') {
      response.writeHead(200, { 'content-type': 'image/png' });
      response.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]));
    } else if (request.path === '/proto') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"a":1,"__proto__":{"polluted":true},"2":"two","z":[{"__proto__":1}]}');
    } else if (request.path === '/scalar') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('"just a string"');
    } else if (request.path === '/slow') {
      await new Promise((resolve) => setTimeout(resolve, KEEP_ALIVE_MS * 3 + 60));
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"slow":true}');
    } else if (request.path === '/empty') {
      response.writeHead(204);
      response.end();
    } else {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ path: request.path, query: request.query, nested: { b: 2, a: [true, null] } }));
    }
  });
  const server = upstream.url;
  registry.replace(
    lockWith([
      lockedOperation({
        tool: 'list_orders',
        method: 'GET',
        path: '/orders',
        server,
        title: 'List orders',
        parameters: [
          { name: 'status', in: 'query', argument: 'status', required: false, style: 'form', explode: true, allowReserved: false },
        ],
        inputSchema: { type: 'object', properties: { status: { type: 'string', enum: ['open', 'shipped'] } }, additionalProperties: false },
      }),
      lockedOperation({ tool: 'array_report', method: 'GET', path: '/array', server }),
      lockedOperation({ tool: 'text_report', method: 'GET', path: '/text', server }),
      lockedOperation({ tool: 'broken_report', method: 'GET', path: '/broken', server }),
      lockedOperation({ tool: 'empty_delete', method: 'DELETE', path: '/empty', server }),
      lockedOperation({ tool: 'binary_report', method: 'GET', path: '/binary', server }),
      lockedOperation({ tool: 'proto_report', method: 'GET', path: '/proto', server }),
      lockedOperation({ tool: 'scalar_report', method: 'GET', path: '/scalar', server }),
      lockedOperation({ tool: 'slow_report', method: 'GET', path: '/slow', server }),
      lockedOperation({ tool: 'drifted_report', method: 'GET', path: '/drifted', server }),
      lockedOperation({ tool: 'not_in_session', method: 'GET', path: '/secret', server }),
    ]),
  );
  registry.setBlocked('orders', new Map([['drifted_report', 'the operation changed upstream']]));
  fastUrl = await startApp(true);
  sdkUrl = await startApp(false);
  fastKeepAliveUrl = await startApp(true, KEEP_ALIVE_MS);
  sdkKeepAliveUrl = await startApp(false, KEEP_ALIVE_MS);
  sdkJsonUrl = await startSdkJsonReference();
});

afterAll(async () => {
  for (const app of apps) await app.close();
  sdkJsonServer?.closeAllConnections();
  await new Promise((resolve) => sdkJsonServer?.close(resolve) ?? resolve(undefined));
  await upstream?.close();
  await agent.close();
});

interface Exchange {
  headers?: Record<string, string | undefined>;
  body: unknown;
}

function modern(method: string, params: Record<string, unknown>, extra: { name?: string; id?: string | number } = {}): Exchange {
  return {
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': REVISION,
      'mcp-method': method,
      ...(extra.name === undefined ? {} : { 'mcp-name': extra.name }),
    },
    body: { jsonrpc: '2.0', id: extra.id ?? 7, method, params: { ...params, _meta: ENVELOPE } },
  };
}

/** What goes over the wire, minus the headers that name the moment or the connection. */
async function send(url: string, exchange: Exchange): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(exchange.headers ?? {})) if (value !== undefined) headers[name] = value;
  const response = await httpRequest(url, {
    method: 'POST',
    headers,
    body: typeof exchange.body === 'string' ? exchange.body : JSON.stringify(exchange.body),
    dispatcher: agent,
  });
  const body = await response.body.text();
  const { date: _date, 'keep-alive': _keepAlive, ...rest } = response.headers;
  return { status: response.statusCode, headers: rest, body };
}

async function bothPaths(
  exchange: Exchange,
  urls: { fast: string; sdk: string } = { fast: fastUrl, sdk: sdkUrl },
): Promise<{ fast: Awaited<ReturnType<typeof send>>; sdk: Awaited<ReturnType<typeof send>>; servedFast: string[] }> {
  served.length = 0;
  const fast = await send(urls.fast, exchange);
  const servedFast = [...served];
  served.length = 0;
  const sdk = await send(urls.sdk, exchange);
  expect(served).toEqual([]); // the SDK-only gateway never takes the fast path
  return { fast, sdk, servedFast };
}

const TAKEN: Array<[string, Exchange]> = [
  ['tools/list, first page', modern('tools/list', {})],
  ['tools/list, empty cursor', modern('tools/list', { cursor: '' })],
  [
    'tools/call with a JSON object answer',
    modern('tools/call', { name: 'list_orders', arguments: { status: 'open' } }, { name: 'list_orders' }),
  ],
  [
    'tools/call with a string id and client info',
    {
      ...modern('tools/call', { name: 'list_orders', arguments: {} }, { name: 'list_orders', id: 'call-1' }),
      body: {
        jsonrpc: '2.0',
        id: 'call-1',
        method: 'tools/call',
        params: {
          name: 'list_orders',
          arguments: {},
          _meta: { ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' } },
        },
      },
    },
  ],
  ['tools/call without arguments', modern('tools/call', { name: 'list_orders' }, { name: 'list_orders' })],
  ['tools/call with a JSON array answer', modern('tools/call', { name: 'array_report', arguments: {} }, { name: 'array_report' })],
  ['tools/call with a text answer', modern('tools/call', { name: 'text_report', arguments: {} }, { name: 'text_report' })],
  ['tools/call with an upstream 503', modern('tools/call', { name: 'broken_report', arguments: {} }, { name: 'broken_report' })],
  ['tools/call with an empty 204', modern('tools/call', { name: 'empty_delete', arguments: {} }, { name: 'empty_delete' })],
  [
    'tools/call with invalid arguments',
    modern('tools/call', { name: 'list_orders', arguments: { status: 'lost', extra: 1 } }, { name: 'list_orders' }),
  ],
  ['tools/call with header whitespace', modern('tools/call', { name: 'list_orders', arguments: {} }, { name: '  list_orders\t' })],
];

const LEFT_TO_THE_SDK: Array<[string, Exchange]> = [
  ['an unknown tool (-32602)', modern('tools/call', { name: 'nope', arguments: {} }, { name: 'nope' })],
  ['a tool outside the session', modern('tools/call', { name: 'not_in_session', arguments: {} }, { name: 'not_in_session' })],
  ['a tool blocked by drift', modern('tools/call', { name: 'drifted_report', arguments: {} }, { name: 'drifted_report' })],
  ['Mcp-Name disagreeing with the body (-32020)', modern('tools/call', { name: 'list_orders', arguments: {} }, { name: 'text_report' })],
  ['Mcp-Name missing', modern('tools/call', { name: 'list_orders', arguments: {} })],
  [
    'Mcp-Name as a Base64 sentinel',
    modern('tools/call', { name: 'list_orders', arguments: {} }, { name: `=?base64?${Buffer.from('list_orders').toString('base64')}?=` }),
  ],
  [
    'Mcp-Method missing',
    {
      ...modern('tools/call', { name: 'list_orders' }, { name: 'list_orders' }),
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': REVISION,
        'mcp-name': 'list_orders',
      },
    },
  ],
  ['Mcp-Method disagreeing', { ...modern('tools/list', {}), headers: { ...modern('tools/list', {}).headers, 'mcp-method': 'tools/call' } }],
  [
    'MCP-Protocol-Version missing',
    { ...modern('tools/list', {}), headers: { ...modern('tools/list', {}).headers, 'mcp-protocol-version': undefined } },
  ],
  [
    'MCP-Protocol-Version disagreeing with _meta',
    { ...modern('tools/list', {}), headers: { ...modern('tools/list', {}).headers, 'mcp-protocol-version': '2025-11-25' } },
  ],
  [
    'an unsupported revision in _meta (-32022)',
    {
      ...modern('tools/list', {}),
      headers: { ...modern('tools/list', {}).headers, 'mcp-protocol-version': '2099-01-01' },
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
      },
    },
  ],
  [
    'a modern header without the envelope',
    { ...modern('tools/list', {}), body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} } },
  ],
  [
    'an envelope missing clientCapabilities',
    {
      ...modern('tools/list', {}),
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': REVISION } } },
    },
  ],
  ['an invalid cursor', modern('tools/list', { cursor: 'not-a-cursor' })],
  [
    'a malformed clientInfo in the envelope',
    {
      ...modern('tools/list', {}),
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: { ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': { name: 5 } } },
      },
    },
  ],
  [
    'the same malformed envelope again (remembered verdict)',
    {
      ...modern('tools/list', {}),
      body: {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/list',
        params: { _meta: { ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': { name: 5 } } },
      },
    },
  ],
  [
    'clientCapabilities that is not an object',
    {
      ...modern('tools/call', {}, { name: 'list_orders' }),
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'list_orders', _meta: { ...ENVELOPE, 'io.modelcontextprotocol/clientCapabilities': 'all' } },
      },
    },
  ],
  ['tools/call with non-object arguments', modern('tools/call', { name: 'list_orders', arguments: [1] }, { name: 'list_orders' })],
  ['tools/call with a name that is not a string', modern('tools/call', { name: 5, arguments: {} }, { name: '5' })],
  [
    'tools/call with an unknown param member',
    modern('tools/call', { name: 'list_orders', arguments: {}, task: { ttl: 1 } }, { name: 'list_orders' }),
  ],
  [
    'a logLevel in _meta',
    {
      ...modern('tools/list', {}),
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: { ...ENVELOPE, 'io.modelcontextprotocol/logLevel': 'debug' } },
      },
    },
  ],
  [
    'a notification',
    {
      ...modern('notifications/cancelled', {}),
      body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: ENVELOPE } },
    },
  ],
  ['a batch', { ...modern('tools/list', {}), body: [modern('tools/list', {}).body] }],
  ['server/discover', modern('server/discover', {})],
  [
    'a JSON-RPC version other than 2.0',
    { ...modern('tools/list', {}), body: { jsonrpc: '1.0', id: 1, method: 'tools/list', params: { _meta: ENVELOPE } } },
  ],
  [
    'a fractional id',
    { ...modern('tools/list', {}), body: { jsonrpc: '2.0', id: 1.5, method: 'tools/list', params: { _meta: ENVELOPE } } },
  ],
  ['malformed JSON', { ...modern('tools/list', {}), body: '{"jsonrpc":' }],
  ['a text/plain body', { ...modern('tools/list', {}), headers: { ...modern('tools/list', {}).headers, 'content-type': 'text/plain' } }],
];

describe('the /mcp fast path answers exactly as the SDK does', () => {
  it.each(TAKEN)('%s: taken by the fast path, same bytes as the SDK', async (_label, exchange) => {
    const { fast, sdk, servedFast } = await bothPaths(exchange);
    expect(servedFast).toEqual([(exchange.body as { method: string }).method]);
    expect(fast.status).toBe(200);
    expect(fast).toEqual(sdk);
  });

  it.each(LEFT_TO_THE_SDK)('%s: left to the SDK, same answer', async (_label, exchange) => {
    const { fast, sdk, servedFast } = await bothPaths(exchange);
    expect(servedFast).toEqual([]);
    expect(fast).toEqual(sdk);
  });

  it('pages through tools/list with the cursor of each page, identically', async () => {
    let cursor: string | undefined;
    const fastPages: string[] = [];
    for (let page = 0; page < 10; page += 1) {
      const { fast, sdk, servedFast } = await bothPaths(modern('tools/list', cursor === undefined ? {} : { cursor }));
      expect(servedFast).toEqual(['tools/list']);
      expect(fast).toEqual(sdk);
      fastPages.push(fast.body);
      cursor = (JSON.parse(fast.body) as { result: { nextCursor?: string } }).result.nextCursor;
      if (cursor === undefined) break;
    }
    // 10 tools in the session, 2 per page; the drifted one is hidden.
    expect(fastPages).toHaveLength(5);
  });

  it('a session that ended is answered by the SDK (isError), not by the fast path', async () => {
    sessionOpen = false;
    try {
      const { fast, sdk, servedFast } = await bothPaths(
        modern('tools/call', { name: 'list_orders', arguments: {} }, { name: 'list_orders' }),
      );
      expect(servedFast).toEqual([]);
      expect(fast).toEqual(sdk);
      expect(JSON.parse(fast.body).result.isError).toBe(true);
    } finally {
      sessionOpen = true;
    }
  });

  it('a tools/list result carries resultType, ttlMs, cacheScope private and the server identity', async () => {
    const { fast } = await bothPaths(modern('tools/list', {}));
    const result = JSON.parse(fast.body).result;
    expect(result).toMatchObject({
      resultType: 'complete',
      ttlMs: 0,
      cacheScope: 'private',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'governed-tool-gateway' } },
    });
  });
});

/** A 2025-11-25 request as the SDK 1.x client sends it after `initialize` (mcp-remote and most clients). */
function legacy(
  method: string,
  params: Record<string, unknown> | undefined,
  extra: { id?: string | number; headers?: Record<string, string | undefined> } = {},
): Exchange {
  return {
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...extra.headers,
    },
    body: { method, ...(params === undefined ? {} : { params }), jsonrpc: '2.0', id: extra.id ?? 3 },
  };
}

const LEGACY_TAKEN: Array<[string, Exchange]> = [
  ['tools/list without params (as SDK 1.x sends it)', legacy('tools/list', undefined)],
  ['tools/list with empty params', legacy('tools/list', {})],
  ['tools/list with an empty cursor', legacy('tools/list', { cursor: '' })],
  ['tools/list without MCP-Protocol-Version', legacy('tools/list', undefined, { headers: { 'mcp-protocol-version': undefined } })],
  [
    'tools/list with Accept in the other order and with q-values',
    legacy('tools/list', {}, { headers: { accept: 'text/event-stream;q=0.9, application/json' } }),
  ],
  ['tools/call with a JSON object answer', legacy('tools/call', { name: 'list_orders', arguments: { status: 'open' } })],
  ['tools/call with a string id', legacy('tools/call', { name: 'list_orders', arguments: {} }, { id: 'call-9' })],
  ['tools/call without arguments', legacy('tools/call', { name: 'list_orders' })],
  [
    'tools/call without MCP-Protocol-Version',
    legacy('tools/call', { name: 'list_orders', arguments: {} }, { headers: { 'mcp-protocol-version': undefined } }),
  ],
  [
    'tools/call with a JSON array answer (structuredContent wrapped as { result })',
    legacy('tools/call', { name: 'array_report', arguments: {} }),
  ],
  [
    'tools/call with a JSON string answer (structuredContent wrapped as { result })',
    legacy('tools/call', { name: 'scalar_report', arguments: {} }),
  ],
  ['tools/call with a __proto__ member in the answer', legacy('tools/call', { name: 'proto_report', arguments: {} })],
  ['tools/call with a text answer', legacy('tools/call', { name: 'text_report', arguments: {} })],
  ['tools/call with a binary answer (embedded resource)', legacy('tools/call', { name: 'binary_report', arguments: {} })],
  ['tools/call with an upstream 503 (isError)', legacy('tools/call', { name: 'broken_report', arguments: {} })],
  ['tools/call with an empty 204', legacy('tools/call', { name: 'empty_delete', arguments: {} })],
  ['tools/call with invalid arguments (isError)', legacy('tools/call', { name: 'list_orders', arguments: { status: 'lost', extra: 1 } })],
  [
    'initialize as SDK 1.x sends it',
    legacy(
      'initialize',
      { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1.0.0' } },
      { id: 0, headers: { 'mcp-protocol-version': undefined } },
    ),
  ],
  [
    'initialize with client capabilities, a title and a string id',
    legacy(
      'initialize',
      {
        protocolVersion: '2025-11-25',
        capabilities: { roots: { listChanged: true }, sampling: {}, elicitation: {} },
        clientInfo: { name: 'c', version: '1', title: 'C' },
      },
      { id: 'init', headers: { 'mcp-protocol-version': undefined } },
    ),
  ],
  [
    'initialize with MCP-Protocol-Version 2025-11-25',
    legacy('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } }, { id: 0 }),
  ],
  [
    'notifications/initialized (202)',
    { headers: legacy('x', undefined).headers, body: { method: 'notifications/initialized', jsonrpc: '2.0' } },
  ],
  [
    'notifications/initialized without MCP-Protocol-Version',
    {
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: { method: 'notifications/initialized', jsonrpc: '2.0' },
    },
  ],
];

const LEGACY_LEFT_TO_THE_SDK: Array<[string, Exchange]> = [
  ['an unknown tool (-32602)', legacy('tools/call', { name: 'nope', arguments: {} })],
  ['a tool outside the session (refused)', legacy('tools/call', { name: 'not_in_session', arguments: {} })],
  ['a tool blocked by drift (refused, isError)', legacy('tools/call', { name: 'drifted_report', arguments: {} })],
  ['Accept without text/event-stream (406)', legacy('tools/list', {}, { headers: { accept: 'application/json' } })],
  [
    'Accept without application/json (406)',
    legacy('tools/call', { name: 'list_orders', arguments: {} }, { headers: { accept: 'text/event-stream' } }),
  ],
  ['no Accept (406)', legacy('tools/list', {}, { headers: { accept: undefined } })],
  ['an older revision in MCP-Protocol-Version', legacy('tools/list', {}, { headers: { 'mcp-protocol-version': '2025-06-18' } })],
  [
    'an unsupported revision in MCP-Protocol-Version (400)',
    legacy('tools/call', { name: 'list_orders', arguments: {} }, { headers: { 'mcp-protocol-version': '1999-01-01' } }),
  ],
  ['a progress token in _meta', legacy('tools/call', { name: 'list_orders', arguments: {}, _meta: { progressToken: 5 } })],
  ['a task-augmented call', legacy('tools/call', { name: 'list_orders', arguments: {}, task: { ttl: 1000 } })],
  ['an Mcp-Method header on a claim-less request', legacy('tools/list', {}, { headers: { 'mcp-method': 'tools/list' } })],
  ['non-object arguments', legacy('tools/call', { name: 'list_orders', arguments: [1] })],
  ['a name that is not a string', legacy('tools/call', { name: 5, arguments: {} })],
  ['tools/call without params', legacy('tools/call', undefined)],
  ['an invalid cursor', legacy('tools/list', { cursor: 'not-a-cursor' })],
  ['a cursor that is not a string', legacy('tools/list', { cursor: 5 })],
  [
    'initialize of an older revision',
    legacy(
      'initialize',
      { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
      { id: 0, headers: { 'mcp-protocol-version': undefined } },
    ),
  ],
  [
    'initialize of an unknown revision',
    legacy(
      'initialize',
      { protocolVersion: '2099-01-01', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
      { id: 0, headers: { 'mcp-protocol-version': undefined } },
    ),
  ],
  [
    'initialize with malformed capabilities',
    legacy(
      'initialize',
      { protocolVersion: '2025-11-25', capabilities: { roots: 5 }, clientInfo: { name: 'c', version: '1' } },
      { id: 0, headers: { 'mcp-protocol-version': undefined } },
    ),
  ],
  [
    'the same malformed capabilities again (remembered verdict)',
    legacy(
      'initialize',
      { protocolVersion: '2025-11-25', capabilities: { roots: 5 }, clientInfo: { name: 'd', version: '2' } },
      { id: 1, headers: { 'mcp-protocol-version': undefined } },
    ),
  ],
  [
    'initialize without clientInfo',
    legacy('initialize', { protocolVersion: '2025-11-25', capabilities: {} }, { id: 0, headers: { 'mcp-protocol-version': undefined } }),
  ],
  [
    'initialize with a clientInfo version that is not a string',
    legacy(
      'initialize',
      { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: 1 } },
      { id: 0, headers: { 'mcp-protocol-version': undefined } },
    ),
  ],
  [
    'initialize with icons in clientInfo',
    legacy(
      'initialize',
      {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'c', version: '1', icons: [{ src: 'https://example.com/i.png' }] },
      },
      { id: 0, headers: { 'mcp-protocol-version': undefined } },
    ),
  ],
  [
    'initialize with _meta',
    legacy(
      'initialize',
      { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' }, _meta: { progressToken: 1 } },
      { id: 0, headers: { 'mcp-protocol-version': undefined } },
    ),
  ],
  [
    'initialize without text/event-stream in Accept (406)',
    legacy(
      'initialize',
      { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
      { id: 0, headers: { 'mcp-protocol-version': undefined, accept: 'application/json' } },
    ),
  ],
  ['ping', legacy('ping', undefined)],
  [
    'notifications/initialized with params',
    { headers: legacy('x', undefined).headers, body: { method: 'notifications/initialized', params: {}, jsonrpc: '2.0' } },
  ],
  [
    'notifications/initialized without Accept (406)',
    { headers: { 'content-type': 'application/json' }, body: { method: 'notifications/initialized', jsonrpc: '2.0' } },
  ],
  [
    'notifications/cancelled',
    { headers: legacy('x', undefined).headers, body: { method: 'notifications/cancelled', params: { requestId: 1 }, jsonrpc: '2.0' } },
  ],
  [
    'a batch of two calls',
    {
      headers: legacy('x', undefined).headers,
      body: [legacy('tools/list', undefined, { id: 1 }).body, legacy('tools/call', { name: 'list_orders', arguments: {} }, { id: 2 }).body],
    },
  ],
  ['a fractional id', legacy('tools/list', {}, { id: 1.5 })],
];

/** The JSON-RPC message of an SSE answer of one `event: message` (the SDK's 2025-11-25 framing). */
function sseMessage(body: string): string {
  const match = /^event: message\ndata: (.*)\n\n$/s.exec(body);
  if (!match) throw new Error(`not one SSE message event: ${body}`);
  return match[1]!;
}

describe("the 2025-11-25 fast path answers as the SDK's transport does when configured for JSON answers", () => {
  it.each(LEGACY_TAKEN)('%s: taken by the fast path, same bytes as the SDK with enableJsonResponse', async (_label, exchange) => {
    const { fast, sdk, servedFast } = await bothPaths(exchange);
    expect(servedFast).toEqual([(exchange.body as { method: string }).method]);
    const reference = await send(sdkJsonUrl, exchange);
    expect(fast).toEqual(reference);
    if ((exchange.body as { id?: unknown }).id === undefined) {
      // A notification: the same empty 202 as the SDK's stateless legacy serving.
      expect(fast).toEqual(sdk);
      expect(fast.status).toBe(202);
      expect(fast.body).toBe('');
    } else {
      expect(fast.status).toBe(200);
      expect(fast.headers['content-type']).toBe('application/json');
      expect(fast.body).toMatch(/^\{"result":.*\}$/s);
      // The same JSON-RPC message the SDK's stateless legacy serving sends as its one SSE event.
      expect(sdk.headers['content-type']).toBe('text/event-stream');
      expect(fast.body).toBe(sseMessage(sdk.body));
    }
  });

  it.each(LEGACY_LEFT_TO_THE_SDK)('%s: left to the SDK, same answer', async (_label, exchange) => {
    const { fast, sdk, servedFast } = await bothPaths(exchange);
    expect(servedFast).toEqual([]);
    expect(fast).toEqual(sdk);
  });

  it('a non-object structuredContent is wrapped as { result } with its text kept, an isError result keeps isError', async () => {
    const array = await bothPaths(legacy('tools/call', { name: 'array_report', arguments: {} }));
    const arrayResult = JSON.parse(array.fast.body).result;
    expect(arrayResult).toEqual({
      content: [{ type: 'text', text: '[1,"two",{"three":3}]' }],
      structuredContent: { result: [1, 'two', { three: 3 }] },
    });
    const broken = await bothPaths(legacy('tools/call', { name: 'broken_report', arguments: {} }));
    const brokenResult = JSON.parse(broken.fast.body).result;
    expect(brokenResult.isError).toBe(true);
    expect(Object.keys(brokenResult)).toEqual(['content', 'isError']);
  });

  it('pages through tools/list with the cursor of each page, identically', async () => {
    let cursor: string | undefined;
    let pages = 0;
    for (let page = 0; page < 10; page += 1) {
      const exchange = legacy('tools/list', cursor === undefined ? undefined : { cursor });
      const { fast, sdk, servedFast } = await bothPaths(exchange);
      expect(servedFast).toEqual(['tools/list']);
      expect(fast).toEqual(await send(sdkJsonUrl, exchange));
      expect(fast.body).toBe(sseMessage(sdk.body));
      pages += 1;
      cursor = (JSON.parse(fast.body) as { result: { nextCursor?: string } }).result.nextCursor;
      if (cursor === undefined) break;
    }
    expect(pages).toBe(5);
  });

  it('a session that ended is answered by the SDK (isError), not by the fast path', async () => {
    sessionOpen = false;
    try {
      const { fast, sdk, servedFast } = await bothPaths(legacy('tools/call', { name: 'list_orders', arguments: {} }));
      expect(servedFast).toEqual([]);
      expect(fast).toEqual(sdk);
      expect(fast.body).toContain('"isError":true');
    } finally {
      sessionOpen = true;
    }
  });

  it('an SDK 1.x client (what mcp-remote uses) connects, lists and calls with every POST on the fast path', async () => {
    served.length = 0;
    const client = new LegacyClient({ name: 'v1-client', version: '1.0.0' });
    await client.connect(new LegacyTransport(new URL(fastUrl)));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('array_report');
      const result = await client.callTool({ name: 'array_report', arguments: {} });
      expect(result.structuredContent).toEqual({ result: [1, 'two', { three: 3 }] });
      const failed = await client.callTool({ name: 'broken_report', arguments: {} });
      expect(failed.isError).toBe(true);
    } finally {
      await client.close();
    }
    expect(served).toEqual(['initialize', 'notifications/initialized', 'tools/list', 'tools/call', 'tools/call']);
  });

  it.each([
    ['2025-11-25', legacy('tools/call', { name: 'list_orders', arguments: {} })],
    ['2026-07-28', modern('tools/call', { name: 'list_orders', arguments: {} }, { name: 'list_orders' })],
  ])('a %s call on the fast path is decided once: one session check, reused from the re-approval check', async (_era, exchange) => {
    sessionChecks = 0;
    served.length = 0;
    const answer = await send(fastUrl, exchange);
    expect(answer.status).toBe(200);
    expect(served).toEqual(['tools/call']);
    expect(sessionChecks).toBe(1);
  });

  it('a slow call is one JSON answer when it ends, with no keep-alive comments, as the SDK writes it', async () => {
    const exchange = legacy('tools/call', { name: 'slow_report', arguments: {} });
    served.length = 0;
    const fast = await send(fastKeepAliveUrl, exchange);
    expect(served).toEqual(['tools/call']);
    expect(fast).toEqual(await send(sdkJsonUrl, exchange));
    expect(fast.headers['content-type']).toBe('application/json');
    expect(JSON.parse(fast.body).result.structuredContent).toEqual({ slow: true });
  });

  it('a call with a progress token still streams: SSE from the SDK path, keep-alive comments while it runs', async () => {
    // Progress is forwarded on the answer's stream (mcp/progress.ts), so such a call is never answered as JSON.
    const urls = { fast: fastKeepAliveUrl, sdk: sdkKeepAliveUrl };
    const exchange = legacy('tools/call', { name: 'slow_report', arguments: {}, _meta: { progressToken: 'p-1' } });
    const { fast, sdk, servedFast } = await bothPaths(exchange, urls);
    expect(servedFast).toEqual([]);
    expect(fast.headers['content-type']).toBe('text/event-stream');
    const framing = /^((?:: keepalive\n\n)+)event: message\ndata: (.*)\n\n$/s;
    const fastFrames = framing.exec(fast.body);
    const sdkFrames = framing.exec(sdk.body);
    expect(fastFrames, fast.body).not.toBeNull();
    expect(sdkFrames, sdk.body).not.toBeNull();
    // The number of comments depends on timing (the upstream takes ~3 intervals); the framing and answer do not.
    expect(fastFrames![2]).toBe(sdkFrames![2]);
    expect({ ...fast, body: '' }).toEqual({ ...sdk, body: '' });
  });
});

describe('fastRequestOf selects only plain modern tools/call and tools/list requests', () => {
  const headers = { 'content-type': 'application/json', 'mcp-protocol-version': REVISION, 'mcp-method': 'tools/list' };
  it('takes a plain tools/list', () => {
    expect(fastRequestOf('POST', headers, modern('tools/list', {}).body)).toEqual({
      era: 'modern',
      method: 'tools/list',
      id: 7,
      cursor: undefined,
    });
  });
  it('leaves GET, repeated headers and other methods to the SDK', () => {
    expect(fastRequestOf('GET', headers, modern('tools/list', {}).body)).toBeUndefined();
    expect(
      fastRequestOf('POST', { ...headers, 'mcp-method': ['tools/list', 'tools/list'] }, modern('tools/list', {}).body),
    ).toBeUndefined();
    expect(fastRequestOf('POST', { ...headers, 'mcp-method': 'ping' }, { ...(modern('ping', {}).body as object) })).toBeUndefined();
  });
});

describe('toolsListResultText writes what JSON.stringify of the encoded result writes', () => {
  const serverInfo = { name: 'gateway', version: '1.2.3' };
  const hint = { ttlMs: 0, cacheScope: 'private' as const };
  const tools = [
    {
      name: 'a',
      title: 'Ä "quoted" \\ tool',
      description: 'line\nbreak \u2028 and </script>',
      inputSchema: { type: 'object', properties: { x: { type: 'string', pattern: '^[a-z]+$' } } },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    {
      name: 'b',
      description: '',
      inputSchema: { type: 'object' },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
  ];
  it.each([
    ['no tools', { tools: [] }, 1],
    ['two tools', { tools }, 'req-1'],
    ['a page with a cursor', { tools, nextCursor: 'eyJ2IjoxfQ' }, 42],
    ['the same tool objects again (their JSON is reused)', { tools }, 43],
  ])('%s', (_label, page, id) => {
    const expected = JSON.stringify({ result: encodeModernResult(page as Record<string, unknown>, serverInfo, hint), jsonrpc: '2.0', id });
    expect(toolsListResultText(id, page, serverInfo, hint)).toBe(expected);
  });
});

describe("the 2025-11-25 encoders write what the SDK's legacy codec writes", () => {
  it('legacyCallToolResult wraps non-objects, adds the text block only when none exists, and orders members', () => {
    expect(legacyCallToolResult({ isError: true, content: [{ type: 'text', text: 'x' }] } as never)).toEqual({
      content: [{ type: 'text', text: 'x' }],
      isError: true,
    });
    expect(JSON.stringify(legacyCallToolResult({ structuredContent: 5, content: [] }))).toBe(
      '{"content":[{"type":"text","text":"5"}],"structuredContent":{"result":5}}',
    );
    expect(JSON.stringify(legacyCallToolResult({ structuredContent: null, content: [{ type: 'text', text: 'null' }] }))).toBe(
      '{"content":[{"type":"text","text":"null"}],"structuredContent":{"result":null}}',
    );
    const withProto = JSON.parse('{"a":1,"__proto__":{"x":1}}') as unknown;
    expect(JSON.stringify(legacyCallToolResult({ structuredContent: withProto, content: [] }))).toBe(
      '{"content":[],"structuredContent":{"a":1}}',
    );
  });
  it('legacyToolsListResultText writes the page as JSON.stringify does, with no 2026 members', () => {
    const tools = [{ name: 'a', inputSchema: { type: 'object' } }];
    expect(legacyToolsListResultText(4, { tools, nextCursor: 'c' })).toBe(
      JSON.stringify({ result: { tools, nextCursor: 'c' }, jsonrpc: '2.0', id: 4 }),
    );
    expect(legacyToolsListResultText('r', { tools: [] })).toBe(JSON.stringify({ result: { tools: [] }, jsonrpc: '2.0', id: 'r' }));
  });
});

describe('the SSE keep-alive default', () => {
  it("is the SDK transport's own default, so a gateway without sseKeepAliveMs keeps the SDK's interval", () => {
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    expect((transport as unknown as { _keepAliveMs: number })._keepAliveMs).toBe(DEFAULT_SSE_KEEP_ALIVE_MS);
  });
});
