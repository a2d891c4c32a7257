import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importOpenApi } from '@gateway/core';
import { repositoryRoot } from '../../../test-support/cli.js';
import { closedPort } from './workspace.js';

const serverModule = join(repositoryRoot, 'examples', 'orders-api', 'server.mjs');

interface OrdersApi {
  url: string;
  close(): Promise<void>;
  requests: Array<{ method: string; path: string; query: Record<string, string>; headers: Record<string, string>; body: unknown }>;
}

describe('the example orders API', () => {
  let api: OrdersApi;
  const key = 'test-key';
  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${api.url}${path}`, { ...init, headers: { 'x-api-key': key, ...(init.headers as Record<string, string>) } });

  beforeAll(async () => {
    const { startOrdersApi } = (await import(serverModule)) as { startOrdersApi: (options: object) => Promise<OrdersApi> };
    api = await startOrdersApi({ host: '127.0.0.1', port: 0, apiKey: key });
  });
  afterAll(async () => {
    await api.close();
  });

  it('refuses a request without the right X-API-Key (401)', async () => {
    expect((await fetch(`${api.url}/orders`)).status).toBe(401);
    expect((await fetch(`${api.url}/orders`, { headers: { 'x-api-key': 'wrong' } })).status).toBe(401);
  });

  it('searches with query parameters, gets, creates (201) and deletes (204) orders', async () => {
    const shipped = (await (await call('/orders?status=shipped&limit=5')).json()) as { orders: Array<{ id: string; status: string }> };
    expect(shipped.orders.map((order) => order.status)).toEqual(['shipped']);
    expect((await call('/orders?limit=0')).status).toBe(400);

    const created = await call('/orders', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ customer: 'Edsger', items: [{ sku: 'BOOK-002', quantity: 3 }] }),
    });
    expect(created.status).toBe(201);
    const order = (await created.json()) as { id: string; status: string };
    expect(order.status).toBe('pending');
    expect(((await (await call(`/orders/${order.id}`)).json()) as { customer: string }).customer).toBe('Edsger');
    expect(
      (await call('/orders', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"customer":""}' })).status,
    ).toBe(400);

    expect((await call(`/orders/${order.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await call(`/orders/${order.id}`)).status).toBe(404);
  });

  it('records every request it receives for tests: method, path, query, headers and parsed body', async () => {
    const before = api.requests.length;
    await call('/orders', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ customer: 'Barbara', items: [{ sku: 'X', quantity: 1 }] }),
    });
    await call('/orders?status=pending');
    const [post, search] = api.requests.slice(before);
    expect(post).toMatchObject({ method: 'POST', path: '/orders', body: { customer: 'Barbara' } });
    expect(post!.headers['x-api-key']).toBe(key);
    expect(search).toMatchObject({ method: 'GET', path: '/orders', query: { status: 'pending' } });
  });

  it('is described by openapi.yaml: four supported operations behind the api_key scheme', async () => {
    const imported = await importOpenApi('openapi.yaml', { baseDirectory: join(repositoryRoot, 'examples', 'orders-api') });
    expect(imported.openapiVersion).toBe('3.1.0');
    const tools = imported.operations.map((operation) => [operation.tool, operation.method, operation.path, operation.status]);
    expect(tools.sort()).toEqual([
      ['create_order', 'POST', '/orders', 'supported'],
      ['delete_order', 'DELETE', '/orders/{orderId}', 'supported'],
      ['get_order', 'GET', '/orders/{orderId}', 'supported'],
      ['search_orders', 'GET', '/orders', 'supported'],
    ]);
    for (const operation of imported.operations) {
      expect(operation.server).toBe('http://127.0.0.1:4010');
      expect(operation.security).toEqual([{ api_key: [] }]);
      expect(operation.securitySchemes.api_key).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
    }
  });

  it('runs as `node server.mjs --port N`', async () => {
    const port = await closedPort();
    const child = spawn(process.execPath, [serverModule, '--port', String(port), '--api-key', key], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the server did not start within 10 s')), 10_000);
        child.stdout.on('data', (chunk: Buffer) => {
          if (chunk.toString().includes('listening')) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
      });
      const response = await fetch(`http://127.0.0.1:${port}/orders/ord_1001`, { headers: { 'x-api-key': key } });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { id: string }).id).toBe('ord_1001');
    } finally {
      child.kill('SIGTERM');
    }
  });
});
