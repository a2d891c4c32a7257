import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import type { FastifyInstance } from 'fastify';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { parseConfig } from '@gateway/core';
import { buildApp, closeGracefully } from '../app.js';
import { MAX_MCP_BODY_DEPTH } from './json-rpc.js';
import { createExecutor, NO_CREDENTIALS } from '../execute/index.js';
import { PublicationRegistry } from '../publications/index.js';
import { allowAllAuthorizer, lockWith, lockedOperation, startRecordingUpstream } from '../../test/support/fixtures.js';
import { freePort } from '../../test/support/net.js';

let upstream: Awaited<ReturnType<typeof startRecordingUpstream>>;
let app: FastifyInstance;
let mcpUrl: string;
const agent = new Agent({ connect: { timeout: 1000 } });
const registry = new PublicationRegistry();

beforeAll(async () => {
  upstream = await startRecordingUpstream(async (request, response) => {
    if (request.path === '/slow') await new Promise((resolve) => setTimeout(resolve, 400));
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ method: request.method, path: request.path }));
  });
  const server = upstream.url;
  registry.replace(
    lockWith([
      lockedOperation({
        tool: 'list_orders',
        method: 'GET',
        path: '/orders',
        server,
        parameters: [
          { name: 'status', in: 'query', argument: 'status', required: false, style: 'form', explode: true, allowReserved: false },
        ],
        inputSchema: { type: 'object', properties: { status: { type: 'string' } }, additionalProperties: false },
      }),
      lockedOperation({ tool: 'slow_report', method: 'GET', path: '/slow', server }),
      lockedOperation({
        tool: 'delete_order',
        method: 'DELETE',
        path: '/orders/{id}',
        server,
        title: 'Delete an order',
        parameters: [{ name: 'id', in: 'path', argument: 'id', required: true, style: 'simple', explode: false, allowReserved: false }],
        inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      }),
    ]),
  );
  const port = await freePort();
  mcpUrl = `http://127.0.0.1:${port}/mcp`;
  const loaded = parseConfig(`gateway:\n  url: http://127.0.0.1:${port}\nsources: {}\n`, '/tmp/gateway.yaml');
  app = await buildApp({
    loaded,
    mcpUrl,
    authorizer: allowAllAuthorizer(registry),
    registry,
    executor: createExecutor({
      credentials: { resolve: async () => NO_CREDENTIALS },
      dispatcherFor: () => agent,
      limitsFor: () => ({ connectMs: 1000, totalMs: 2000, maxResponseBytes: 10_000 }),
    }),
    logger: false,
    isLoopbackListener: true,
    listenPort: port,
  });
  await app.listen({ host: '127.0.0.1', port });
});

afterAll(async () => {
  await app?.close();
  await upstream?.close();
  await agent.close();
});

describe('/mcp serves both eras from the in-memory index', () => {
  it('a 2026-07-28 client (SDK v2) lists annotated tools and calls one', async () => {
    const client = new Client({ name: 'test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['delete_order', 'list_orders', 'slow_report']);
    expect(tools[0]!.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      title: 'Delete an order',
    });
    expect(tools[1]!.annotations).toMatchObject({ readOnlyHint: true });
    const result = await client.callTool({ name: 'list_orders', arguments: { status: 'open' } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ method: 'GET', path: '/orders' });
    expect(upstream.requests.at(-1)).toMatchObject({ method: 'GET', path: '/orders', query: 'status=open' });
    await client.close();
  });

  it('a 2025-11-25 client (SDK v1) lists and calls statelessly', async () => {
    const client = new LegacyClient({ name: 'legacy', version: '1.0.0' });
    await client.connect(new LegacyTransport(new URL(mcpUrl)));
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['delete_order', 'list_orders', 'slow_report']);
    const result = await client.callTool({ name: 'delete_order', arguments: { id: 'a/b' } });
    expect(result.isError).toBeFalsy();
    expect(upstream.requests.at(-1)).toMatchObject({ method: 'DELETE', path: '/orders/a%2Fb' });
    await client.close();
  });
});

describe('drift overlay and list changes', () => {
  it('a blocked tool leaves tools/list at once, is refused naming the drift, and subscribers hear list_changed', async () => {
    const client = new Client({ name: 'listener', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
    let notified = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      notified += 1;
    });
    const subscription = await client.listen({ toolsListChanged: true });
    registry.setBlocked('orders', new Map([['list_orders', 'GET /orders changed in the live description']]));
    try {
      const deadline = Date.now() + 5_000;
      while (notified === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(notified).toBeGreaterThan(0);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).not.toContain('list_orders');
      const before = upstream.requests.length;
      const refused = await client.callTool({ name: 'list_orders', arguments: {} });
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.content)).toContain('drift');
      expect(JSON.stringify(refused.content)).toContain('GET /orders changed');
      expect(upstream.requests.length).toBe(before);
      // Unchanged tools keep working.
      expect((await client.callTool({ name: 'delete_order', arguments: { id: '1' } })).isError).toBeFalsy();
    } finally {
      registry.setBlocked('orders', new Map());
      await subscription.close();
    }
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('list_orders');
    await client.close();
  });

  it('an unknown tool is a JSON-RPC -32602 error', async () => {
    const client = new Client({ name: 'unknown', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });
});

/** A JSON array nested `depth` levels deep, as text (JSON.stringify itself would recurse). */
function nested(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

async function postRaw(
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; json: { error?: { code: number; message: string }; result?: unknown } }> {
  const response = await fetch(mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  });
  const text = await response.text();
  return { status: response.status, json: JSON.parse(text.replace(/^[\s\S]*?data: /, '')) };
}

const MODERN = { 'mcp-protocol-version': '2026-07-28' };
const MODERN_META = '{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}';

describe('deep nesting on /mcp is a client error', () => {
  const deep = nested(200_000);
  it.each([
    ['id', { 'mcp-protocol-version': '2025-11-25' }, `{"jsonrpc":"2.0","id":${deep},"method":"tools/list","params":{}}`],
    ['_meta', { ...MODERN, 'mcp-method': 'tools/list' }, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"x":${deep}}}}`],
    [
      'arguments (2026-07-28)',
      { ...MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'list_orders' },
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` +
        `{"name":"list_orders","arguments":{"status":${deep}},"_meta":${MODERN_META}}}`,
    ],
    [
      'arguments (2025-11-25)',
      { 'mcp-protocol-version': '2025-11-25' },
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_orders","arguments":{"status":${deep}}}}`,
    ],
    ['cursor', { 'mcp-protocol-version': '2025-11-25' }, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":${deep}}}`],
  ] as const)('200,000-deep JSON in %s is answered 400 with JSON-RPC -32600, not a crash', async (_where, headers, body) => {
    const before = upstream.requests.length;
    const response = await postRaw(headers, body);
    expect(response.status).toBe(400);
    expect(response.json.error?.code).toBe(-32600);
    expect(response.json.error?.message).toContain(`deeper than ${MAX_MCP_BODY_DEPTH} levels`);
    expect(upstream.requests.length).toBe(before);
  });

  it('brackets inside strings do not count, and a body at the limit is served normally', async () => {
    const brackets = '['.repeat(1000);
    const inString = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_orders","arguments":{"status":"${brackets}"}}}`;
    const quoted = await postRaw({ 'mcp-protocol-version': '2025-11-25' }, inString);
    expect(quoted.status).toBe(200);
    expect(quoted.json.error).toBeUndefined();
    // Envelope (1) + params (2) + arguments (3): an argument value of the remaining depth is accepted.
    const atLimit =
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` +
      `{"name":"list_orders","arguments":{"status":${nested(MAX_MCP_BODY_DEPTH - 3)}}}}`;
    const served = await postRaw({ 'mcp-protocol-version': '2025-11-25' }, atLimit);
    expect(served.status).toBe(200);
    expect(JSON.stringify(served.json.result)).toContain('invalid arguments for list_orders');
    const over =
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` +
      `{"name":"list_orders","arguments":{"status":${nested(MAX_MCP_BODY_DEPTH - 2)}}}}`;
    expect((await postRaw({ 'mcp-protocol-version': '2025-11-25' }, over)).json.error?.code).toBe(-32600);
  });
});

describe('graceful shutdown', () => {
  it('a call in flight when the server closes still gets its result', async () => {
    const client = new LegacyClient({ name: 'shutdown', version: '1.0.0' });
    await client.connect(new LegacyTransport(new URL(mcpUrl)));
    const pending = client.callTool({ name: 'slow_report', arguments: {} });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closeStarted = Date.now();
    const closing = closeGracefully(app, 5_000);
    const result = await pending;
    await closing;
    // Closing does not wait for the finished client's keep-alive timeout.
    expect(Date.now() - closeStarted).toBeLessThan(2_000);
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ method: 'GET', path: '/slow' });
    // Once closed, nothing is accepted any more.
    await expect(fetch(`${mcpUrl.replace('/mcp', '/healthz')}`)).rejects.toThrow();
  });
});
