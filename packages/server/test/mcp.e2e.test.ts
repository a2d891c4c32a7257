import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ORDERS_API_KEY, startHarness, type Harness } from './support/harness.js';

let harness: Harness;
/** The MCP client's own credential: it must never reach the upstream. */
const CLIENT_TOKEN = 'client-bearer-token-never-forwarded';

beforeAll(async () => {
  harness = await startHarness();
});

afterAll(async () => {
  await harness?.stop();
});

type Call = (
  name: string,
  args: Record<string, unknown>,
) => Promise<{ isError?: boolean; content: unknown[]; structuredContent?: unknown }>;

async function modernClient(): Promise<{
  call: Call;
  list: () => Promise<Array<{ name: string; annotations?: unknown }>>;
  version: string | undefined;
  close(): Promise<void>;
}> {
  const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(harness.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${CLIENT_TOKEN}` } } }),
  );
  return {
    call: (name, args) => client.callTool({ name, arguments: args }) as never,
    list: async () => (await client.listTools()).tools,
    version: client.getNegotiatedProtocolVersion(),
    close: () => client.close(),
  };
}

async function legacyClient(): Promise<{
  call: Call;
  list: () => Promise<Array<{ name: string; annotations?: unknown }>>;
  version: string | undefined;
  close(): Promise<void>;
}> {
  const client = new LegacyClient({ name: 'v1-test', version: '1.0.0' });
  const transport = new LegacyTransport(new URL(harness.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${CLIENT_TOKEN}` } } });
  await client.connect(transport);
  return {
    call: (name, args) => client.callTool({ name, arguments: args }) as never,
    list: async () => (await client.listTools()).tools,
    version: transport.protocolVersion,
    close: () => client.close(),
  };
}

function lastRequest() {
  return harness.api.requests.at(-1)!;
}

function textOf(result: { content: unknown[] }): string {
  return (result.content as Array<{ type: string; text?: string }>).map((block) => block.text ?? '').join('\n');
}

describe.each([
  ['2026-07-28 (SDK v2 client)', modernClient, '2026-07-28'],
  ['2025-11-25 (SDK v1 client)', legacyClient, '2025-11-25'],
] as const)('%s', (_label, connect, expectedVersion) => {
  it('negotiates its era and lists the published tools with annotations, in name order', async () => {
    const client = await connect();
    expect(client.version).toBe(expectedVersion);
    const tools = await client.list();
    expect(tools.map((tool) => tool.name)).toEqual(['create_order', 'delete_order', 'get_order', 'search_orders']);
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('search_orders')!.annotations).toMatchObject({ readOnlyHint: true, title: 'Search orders' });
    expect(byName.get('delete_order')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true });
    expect(byName.get('create_order')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false });
    await client.close();
  });

  it('GET with a query parameter reaches the upstream exactly, with the vault credential and no client header', async () => {
    const client = await connect();
    const result = await client.call('search_orders', { status: 'shipped' });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ orders: [{ id: 'ord_1002', status: 'shipped' }] });
    const upstream = lastRequest();
    expect(upstream).toMatchObject({ method: 'GET', path: '/orders', query: { status: 'shipped' } });
    expect(upstream.headers['x-api-key']).toBe(ORDERS_API_KEY);
    expect(upstream.headers.authorization).toBeUndefined();
    expect(JSON.stringify(upstream.headers)).not.toContain(CLIENT_TOKEN);
    // Hop-by-hop and MCP headers of the client request are not forwarded either.
    expect(Object.keys(upstream.headers).filter((name) => name.startsWith('mcp-'))).toEqual([]);
    expect(upstream.body).toBeUndefined();
    await client.close();
  });

  it('GET with a path parameter', async () => {
    const client = await connect();
    const result = await client.call('get_order', { orderId: 'ord_1001' });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ id: 'ord_1001', customer: 'Ada Lovelace' });
    expect(lastRequest()).toMatchObject({ method: 'GET', path: '/orders/ord_1001', query: {} });
    await client.close();
  });

  it('POST with a JSON body sends exactly that body as application/json', async () => {
    const client = await connect();
    const order = { customer: `Katherine Johnson (${expectedVersion})`, items: [{ sku: 'SLIDE-RULE', quantity: 1 }] };
    const result = await client.call('create_order', { body: order });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ ...order, status: 'pending' });
    const upstream = lastRequest();
    expect(upstream).toMatchObject({ method: 'POST', path: '/orders', body: order });
    expect(upstream.headers['content-type']).toBe('application/json');
    await client.close();
  });

  it('DELETE answers a text block for the 204, and a second DELETE is an isError result with the 404', async () => {
    const client = await connect();
    const created = await client.call('create_order', { body: { customer: 'to delete', items: [{ sku: 'X', quantity: 1 }] } });
    const id = (created.structuredContent as { id: string }).id;
    const deleted = await client.call('delete_order', { orderId: id });
    expect(deleted.isError).toBeFalsy();
    expect(textOf(deleted)).toContain('204');
    expect(lastRequest()).toMatchObject({ method: 'DELETE', path: `/orders/${id}` });
    const again = await client.call('delete_order', { orderId: id });
    expect(again.isError).toBe(true);
    expect(textOf(again)).toContain('HTTP 404');
    expect(textOf(again)).toContain('not_found');
    await client.close();
  });

  it('invalid arguments are an isError result listing each problem, and never reach the upstream', async () => {
    const client = await connect();
    const before = harness.api.requests.length;
    const result = await client.call('search_orders', { status: 'lost', limit: 500, extra: true });
    expect(result.isError).toBe(true);
    const text = textOf(result);
    expect(text).toContain('/status');
    expect(text).toContain('/limit');
    expect(text).toContain("'extra'");
    expect(harness.api.requests.length).toBe(before);
    await client.close();
  });
});

function rawPost(headers: Record<string, string>, body: unknown): Promise<{ status: number; body: string }> {
  const url = new URL(harness.mcpUrl);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    request.on('error', reject);
    request.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

describe('DNS-rebinding protection and request limits on /mcp', () => {
  it('a foreign Origin is answered 403', async () => {
    const response = await rawPost({ origin: 'http://evil.example.com' }, initialize);
    expect(response.status).toBe(403);
    expect(response.body).toContain('Origin');
  });

  it('the opaque Origin "null" is answered 403', async () => {
    expect((await rawPost({ origin: 'null' }, initialize)).status).toBe(403);
  });

  it('a Host header naming another site is refused', async () => {
    const response = await rawPost({ host: 'evil.example.com' }, initialize);
    expect(response.status).toBe(403);
    expect(response.body).toContain('Host');
  });

  it('the canonical origin and loopback spellings are accepted', async () => {
    const port = new URL(harness.mcpUrl).port;
    expect((await rawPost({ origin: `http://127.0.0.1:${port}` }, initialize)).status).toBe(200);
    expect((await rawPost({ origin: `http://localhost:${port}`, host: `localhost:${port}` }, initialize)).status).toBe(200);
  });

  it('malformed JSON is a JSON-RPC parse error (-32700)', async () => {
    const response = await rawPost({}, '{"jsonrpc":');
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body).error.code).toBe(-32700);
  });

  it('a body over gateway.maxRequestBytes is refused with 413', async () => {
    const response = await rawPost({}, { ...initialize, padding: 'x'.repeat(1_100_000) });
    expect(response.status).toBe(413);
  });

  it('a bad tools/list cursor is -32602', async () => {
    const response = await rawPost(
      { 'mcp-protocol-version': '2025-11-25' },
      { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { cursor: 'not-a-cursor' } },
    );
    expect(JSON.parse(response.body.replace(/^[\s\S]*?data: /, '')).error.code).toBe(-32602);
  });
});

describe('health', () => {
  it('/healthz is alive and /readyz reports the loaded lock', async () => {
    const base = harness.gateway.url;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', tools: 4 });
  });

  it('the vault secret never appears in the logs', () => {
    expect(harness.logs.length).toBeGreaterThan(0);
    expect(harness.logs.join('\n')).not.toContain(ORDERS_API_KEY);
  });
});
