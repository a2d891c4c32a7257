#!/usr/bin/env node
/**
 * The example upstream API the bundled gateway.yaml points at: an in-memory orders service, plain node:http,
 * no dependencies. Described by ./openapi.yaml.
 *
 *   node examples/orders-api/server.mjs --port 4010 [--host 127.0.0.1] [--api-key demo-orders-key]
 *
 * or, from tests:
 *
 *   const api = await startOrdersApi({ port: 0 });  // api.url, api.requests, await api.close()
 *
 * Every request needs the `X-API-Key` header (security scheme `api_key` in the document).
 */
import { createServer } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { pathToFileURL } from 'node:url';

export const DEFAULT_API_KEY = 'demo-orders-key';
const STATUSES = ['pending', 'shipped', 'delivered', 'cancelled'];
const MAX_BODY_BYTES = 1024 * 1024;

function seedOrders() {
  return new Map(
    [
      { id: 'ord_1001', customer: 'Ada Lovelace', items: [{ sku: 'BOOK-001', quantity: 1 }], status: 'pending', createdAt: '2026-01-05T09:00:00.000Z' },
      { id: 'ord_1002', customer: 'Grace Hopper', items: [{ sku: 'MUG-042', quantity: 2 }], status: 'shipped', createdAt: '2026-01-04T09:00:00.000Z' },
      { id: 'ord_1003', customer: 'Alan Turing', items: [{ sku: 'PEN-007', quantity: 10 }], note: 'gift wrap', status: 'delivered', createdAt: '2026-01-03T09:00:00.000Z' },
    ].map((order) => [order.id, order]),
  );
}

function sendJson(response, status, value, headers = {}) {
  const body = JSON.stringify(value);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  response.end(body);
}

function problem(response, status, title, detail) {
  sendJson(response, status, { error: title, detail });
}

function sameKey(given, expected) {
  const a = Buffer.from(String(given ?? ''));
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function readBody(request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    request.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(Object.assign(new Error('body too large'), { status: 413 }));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

/** Returns a problem sentence, or null when `value` is a valid NewOrder (openapi.yaml). */
function newOrderProblem(value) {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'the body must be a JSON object';
  const extra = Object.keys(value).filter((key) => !['customer', 'items', 'note'].includes(key));
  if (extra.length) return `unknown properties: ${extra.join(', ')}`;
  if (typeof value.customer !== 'string' || value.customer.length === 0) return 'customer must be a non-empty string';
  if (!Array.isArray(value.items) || value.items.length === 0) return 'items must be a non-empty array';
  for (const item of value.items) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return 'each item must be an object';
    if (Object.keys(item).some((key) => key !== 'sku' && key !== 'quantity')) return 'items take only sku and quantity';
    if (typeof item.sku !== 'string' || item.sku.length === 0) return 'each item needs a sku';
    if (!Number.isInteger(item.quantity) || item.quantity < 1) return 'each item needs an integer quantity of at least 1';
  }
  if (value.note !== undefined && typeof value.note !== 'string') return 'note must be a string';
  return null;
}

/**
 * Starts the orders API. `port: 0` picks a free port. Resolves once listening.
 * `keepAliveTimeoutMs`: how long an idle connection stays open (Node's default, 5 s, unless given; bench/ab.mjs
 * --instructions gives a minute, since a client slowed down by valgrind may reuse a connection after 5 s).
 * @param {{ host?: string, port?: number, apiKey?: string, keepAliveTimeoutMs?: number }} [options]
 */
export async function startOrdersApi(options = {}) {
  const host = options.host ?? '127.0.0.1';
  const apiKey = options.apiKey ?? DEFAULT_API_KEY;
  const orders = seedOrders();
  let nextNumber = 1004;
  /** Every request as received, for tests: method, path, query, headers, body (parsed JSON when it is JSON). */
  const requests = [];

  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://orders.invalid');
    let text = '';
    try {
      text = await readBody(request);
    } catch (error) {
      problem(response, error.status ?? 400, 'body_unreadable', error.message);
      return;
    }
    let body = text === '' ? undefined : text;
    if (text !== '' && /^application\/(.+\+)?json\b/i.test(request.headers['content-type'] ?? '')) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    requests.push({ method: request.method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers: { ...request.headers }, body });

    if (!sameKey(request.headers['x-api-key'], apiKey)) {
      problem(response, 401, 'unauthorized', 'send the API key in the X-API-Key header');
      return;
    }

    if (url.pathname === '/orders') {
      if (request.method === 'GET') {
        const status = url.searchParams.get('status');
        if (status !== null && !STATUSES.includes(status)) {
          problem(response, 400, 'invalid_status', `status must be one of ${STATUSES.join(', ')}`);
          return;
        }
        const limitText = url.searchParams.get('limit');
        const limit = limitText === null ? 20 : Number(limitText);
        if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
          problem(response, 400, 'invalid_limit', 'limit must be an integer from 1 to 100');
          return;
        }
        const found = [...orders.values()]
          .filter((order) => status === null || order.status === status)
          .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0))
          .slice(0, limit);
        sendJson(response, 200, { orders: found });
        return;
      }
      if (request.method === 'POST') {
        if (typeof body !== 'object' || body === null) {
          problem(response, 400, 'invalid_body', 'send a JSON object with content-type application/json');
          return;
        }
        const invalid = newOrderProblem(body);
        if (invalid) {
          problem(response, 400, 'invalid_body', invalid);
          return;
        }
        const order = {
          id: `ord_${nextNumber++}`,
          customer: body.customer,
          items: body.items.map((item) => ({ sku: item.sku, quantity: item.quantity })),
          ...(body.note === undefined ? {} : { note: body.note }),
          status: 'pending',
          createdAt: new Date().toISOString(),
        };
        orders.set(order.id, order);
        sendJson(response, 201, order, { location: `/orders/${order.id}` });
        return;
      }
      response.writeHead(405, { allow: 'GET, POST' }).end();
      return;
    }

    const match = /^\/orders\/([^/]+)$/.exec(url.pathname);
    if (match) {
      const id = decodeURIComponent(match[1]);
      const order = orders.get(id);
      if (request.method === 'GET' || request.method === 'DELETE') {
        if (!order) {
          problem(response, 404, 'not_found', `no order ${id}`);
          return;
        }
        if (request.method === 'GET') {
          sendJson(response, 200, order);
        } else {
          orders.delete(id);
          response.writeHead(204).end();
        }
        return;
      }
      response.writeHead(405, { allow: 'GET, DELETE' }).end();
      return;
    }
    problem(response, 404, 'not_found', `no route ${request.method} ${url.pathname}`);
  });

  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 4010, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
  return {
    url,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  };
}

function argumentValue(name) {
  const index = process.argv.indexOf(name);
  return index === -1 ? undefined : process.argv[index + 1];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const port = Number(argumentValue('--port') ?? process.env.PORT ?? 4010);
  const host = argumentValue('--host') ?? '127.0.0.1';
  const apiKey = argumentValue('--api-key') ?? process.env.ORDERS_API_KEY ?? DEFAULT_API_KEY;
  const keepAlive = argumentValue('--keep-alive-ms');
  const api = await startOrdersApi({ host, port, apiKey, ...(keepAlive ? { keepAliveTimeoutMs: Number(keepAlive) } : {}) });
  process.stdout.write(`orders API listening on ${api.url} (X-API-Key: ${apiKey === DEFAULT_API_KEY ? DEFAULT_API_KEY : '<as given>'})\n`);
  const stop = () => api.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
