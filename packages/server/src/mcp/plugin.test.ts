import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import type { FastifyInstance } from 'fastify';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { parseConfig } from '@gateway/core';
import { buildApp, closeGracefully } from '../app.js';
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
        parameters: [{ name: 'status', in: 'query', argument: 'status', required: false, style: 'form', explode: true, allowReserved: false }],
        inputSchema: { type: 'object', properties: { status: { type: 'string' } }, additionalProperties: false },
      }),
      lockedOperation({ tool: 'slow_report', method: 'GET', path: '/slow', server }),
      lockedOperation({ tool: 'delete_order', method: 'DELETE', path: '/orders/{id}', server, title: 'Delete an order',
        parameters: [{ name: 'id', in: 'path', argument: 'id', required: true, style: 'simple', explode: false, allowReserved: false }],
        inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } }),
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
    expect(tools[0]!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true, title: 'Delete an order' });
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
