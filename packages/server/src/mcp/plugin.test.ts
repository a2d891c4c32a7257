import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import type { FastifyInstance } from 'fastify';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { parseConfig } from '@gateway/core';
import { buildApp } from '../app.js';
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
  upstream = await startRecordingUpstream((request, response) => {
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
    expect(tools.map((tool) => tool.name)).toEqual(['delete_order', 'list_orders']);
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
    expect(tools.map((tool) => tool.name)).toEqual(['delete_order', 'list_orders']);
    const result = await client.callTool({ name: 'delete_order', arguments: { id: 'a/b' } });
    expect(result.isError).toBeFalsy();
    expect(upstream.requests.at(-1)).toMatchObject({ method: 'DELETE', path: '/orders/a%2Fb' });
    await client.close();
  });
});
