import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import {
  Cancellation,
  createGuardedAgent,
  exchange,
  findSsrfRefusal,
  isExchangeTimeout,
  ResponseTooLarge,
  type ExchangeOptions,
} from '../index.js';

/** Routes of a real loopback server, one behaviour each. */
const routes: Record<string, (request: IncomingMessage, response: ServerResponse) => void> = {
  '/echo': (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      response.setHeader('content-type', 'application/json');
      response.setHeader('x-seen-length', String(request.headers['content-length']));
      response.setHeader('set-cookie', ['a=1', 'b=2']);
      response.end(JSON.stringify({ method: request.method, url: request.url, body: Buffer.concat(chunks).toString() }));
    });
  },
  '/declared-large': (_request, response) => {
    response.setHeader('content-length', '100000');
    response.write('x'.repeat(1000));
  },
  '/streamed-large': (_request, response) => {
    response.statusCode = 202;
    response.setHeader('retry-after', '7');
    for (let index = 0; index < 20; index += 1) response.write('y'.repeat(1000));
    response.end();
  },
  '/silent': () => undefined,
};

let server: Server;
let base: string;
const agent = new Agent({ connections: 1 });

beforeAll(async () => {
  server = createServer((request, response) => routes[new URL(request.url!, 'http://x').pathname]!(request, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await agent.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const options = (path: string, extra: Partial<ExchangeOptions> = {}): ExchangeOptions => ({
  dispatcher: agent,
  url: new URL(`${base}${path}`),
  method: 'GET',
  headers: {},
  timeoutMs: 5_000,
  maxBodyBytes: 10_000,
  overLimit: 'fail',
  ...extra,
});

describe('exchange: one bounded HTTP request through undici dispatch', () => {
  it('sends the method, path with query, headers and body; returns status, parsed headers and the whole body', async () => {
    const post = { method: 'POST' as const, headers: { 'content-type': 'text/plain' }, body: 'héllo' };
    const result = await exchange(options('/echo?a=1&b=%20', post));
    expect(result.statusCode).toBe(200);
    expect(result.headers['content-type']).toBe('application/json');
    expect(result.headers['x-seen-length']).toBe(String(Buffer.byteLength('héllo')));
    expect(result.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(JSON.parse(result.body.toString())).toEqual({ method: 'POST', url: '/echo?a=1&b=%20', body: 'héllo' });
  });

  it('a Content-Length over the limit fails before the body is read; a streamed body over it fails when it passes it', async () => {
    await expect(exchange(options('/declared-large'))).rejects.toBeInstanceOf(ResponseTooLarge);
    await expect(exchange(options('/streamed-large'))).rejects.toBeInstanceOf(ResponseTooLarge);
    // Under a limit it fits, the same streamed answer is read whole.
    const whole = await exchange(options('/streamed-large', { maxBodyBytes: 20_000 }));
    expect(whole.body.length).toBe(20_000);
  });

  it('with overLimit: ignore, an answer over the limit still gives its status and headers (a webhook acknowledgement)', async () => {
    const result = await exchange(options('/streamed-large', { overLimit: 'ignore', maxBodyBytes: 1_500 }));
    expect(result.statusCode).toBe(202);
    expect(result.headers['retry-after']).toBe('7');
    expect(result.body.length).toBe(0);
    const declared = await exchange(options('/declared-large', { overLimit: 'ignore', maxBodyBytes: 1_500 }));
    expect(declared.statusCode).toBe(200);
  });

  it('an answer that never comes is cut at timeoutMs with a TimeoutError; the connection is then free again', async () => {
    const started = performance.now();
    const error = await exchange(options('/silent', { timeoutMs: 200 })).catch((caught: unknown) => caught);
    expect((error as Error).name).toBe('TimeoutError');
    expect(isExchangeTimeout(error)).toBe(true);
    expect(isExchangeTimeout(new Error('ECONNRESET'))).toBe(false);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect((await exchange(options('/echo'))).statusCode).toBe(200);
  });

  it('a request still waiting for the only connection is cut at its deadline too', async () => {
    const silent = exchange(options('/silent', { timeoutMs: 1_000 })).catch((caught: unknown) => caught);
    const queued = await exchange(options('/echo', { timeoutMs: 150 })).catch((caught: unknown) => caught);
    expect((queued as Error).name).toBe('TimeoutError');
    expect(((await silent) as Error).name).toBe('TimeoutError');
  });

  it('a cancelling signal cuts the exchange with its reason; one already aborted never sends', async () => {
    const controller = new AbortController();
    const pending = exchange(options('/silent', { signal: controller.signal })).catch((caught: unknown) => caught);
    setTimeout(() => controller.abort(new Error('client went away')), 50);
    expect(((await pending) as Error).message).toBe('client went away');
    const aborted = AbortSignal.abort(new Error('already gone'));
    await expect(exchange(options('/echo', { signal: aborted }))).rejects.toThrow('already gone');
  });

  it("a Cancellation (the fast path's signal) cuts it the same way, by default with the AbortError an AbortController gives", async () => {
    const cancellation = new Cancellation();
    const pending = exchange(options('/silent', { signal: cancellation })).catch((caught: unknown) => caught);
    setTimeout(() => cancellation.abort(), 50);
    const cut = (await pending) as DOMException;
    expect(cut.name).toBe('AbortError');
    expect(cut.message).toBe(new DOMException('This operation was aborted', 'AbortError').message);
    const gone = new Cancellation();
    gone.abort(new Error('already gone'));
    await expect(exchange(options('/echo', { signal: gone }))).rejects.toThrow('already gone');
    // Settled exchanges took their listeners back, and the one connection serves the next request.
    const answered = new Cancellation();
    expect((await exchange(options('/echo', { signal: answered }))).statusCode).toBe(200);
    answered.abort();
  });

  it("the SSRF guard's refusal comes through as its GatewayError", async () => {
    const guarded = createGuardedAgent();
    const error = await exchange(options('/echo', { dispatcher: guarded })).catch((caught: unknown) => caught);
    await guarded.close();
    expect(findSsrfRefusal(error)).toMatchObject({ code: 'SSRF_ADDRESS_REFUSED' });
  });
});
