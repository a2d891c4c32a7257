import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { PublicationRegistry, type IndexedTool } from '../publications/registry.js';
import { lockWith, lockedOperation, startRecordingUpstream } from '../../test/support/fixtures.js';
import { createExecutor, type ExecutorCredentials } from './index.js';

const SECRET = 'sk-live-canary-0123456789';
let upstream: Awaited<ReturnType<typeof startRecordingUpstream>>;
let other: Awaited<ReturnType<typeof startRecordingUpstream>>;
const agent = new Agent({ connect: { timeout: 1_000 } });
const registry = new PublicationRegistry();
const limits = { connectMs: 1_000, totalMs: 300, maxResponseBytes: 10_000 };
const credentials: ExecutorCredentials = { headers: { authorization: `Bearer ${SECRET}` }, query: {}, cookies: {}, loginId: 'api/bearer' };
const executor = createExecutor({
  credentials: { resolve: async () => credentials },
  dispatcherFor: () => agent,
  limitsFor: () => limits,
  maxBinaryBytes: 100,
});

function tool(name: string): IndexedTool {
  return registry.snapshot().tools.get(name)!;
}

beforeAll(async () => {
  other = await startRecordingUpstream();
  upstream = await startRecordingUpstream(async (request, response) => {
    switch (request.path) {
      case '/slow':
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        response.end('late');
        return;
      case '/big':
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ data: 'x'.repeat(20_000) }));
        return;
      case '/big-chunked':
        response.writeHead(200, { 'content-type': 'text/plain' });
        for (let index = 0; index < 20; index += 1) response.write('y'.repeat(1_000));
        response.end();
        return;
      case '/error':
        response.writeHead(500, { 'content-type': 'text/plain' });
        response.end(`boom ${'z'.repeat(5_000)}`);
        return;
      case '/echo':
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ sawAuthorization: request.headers.authorization }));
        return;
      case '/binary':
        response.writeHead(200, { 'content-type': 'image/png' });
        response.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]));
        return;
      case '/binary-big':
        response.writeHead(200, { 'content-type': 'application/octet-stream' });
        response.end(Buffer.alloc(500, 0xff));
        return;
      case '/array':
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('[1,2,3]');
        return;
      case '/redirect-same':
        response.writeHead(302, { location: '/echo' });
        response.end();
        return;
      case '/redirect-other':
        response.writeHead(307, { location: `${other.url}/steal` });
        response.end();
        return;
      default:
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"ok":true}');
    }
  });
  const server = upstream.url;
  const simple = (name: string, path: string, method = 'GET') => lockedOperation({ tool: name, method, path, server });
  registry.replace(
    lockWith([
      simple('slow', '/slow'),
      simple('big', '/big'),
      simple('big_chunked', '/big-chunked'),
      simple('error', '/error'),
      simple('echo', '/echo'),
      simple('binary', '/binary'),
      simple('binary_big', '/binary-big'),
      simple('array', '/array'),
      simple('redirect_same', '/redirect-same'),
      simple('redirect_other', '/redirect-other'),
      lockedOperation({
        tool: 'get_file',
        method: 'GET',
        path: '/files/{dir}/{name}',
        server: `${server}/v1`,
        parameters: [
          { name: 'dir', in: 'path', argument: 'dir', required: true, style: 'simple', explode: false, allowReserved: false },
          { name: 'name', in: 'path', argument: 'name', required: true, style: 'simple', explode: false, allowReserved: false },
        ],
        inputSchema: { type: 'object', properties: { dir: { type: 'string' }, name: { type: 'string' } }, required: ['dir', 'name'] },
      }),
      lockedOperation({
        tool: 'delete_item',
        method: 'DELETE',
        path: '/items/{itemId}',
        server,
        parameters: [
          { name: 'itemId', in: 'path', argument: 'itemId', required: true, style: 'simple', explode: false, allowReserved: false },
        ],
        inputSchema: { type: 'object', properties: { itemId: { type: 'string' } }, required: ['itemId'] },
      }),
      lockedOperation({
        tool: 'get_labelled',
        method: 'GET',
        path: '/labels/{tag}',
        server,
        parameters: [{ name: 'tag', in: 'path', argument: 'tag', required: true, style: 'label', explode: false, allowReserved: false }],
        inputSchema: { type: 'object', properties: { tag: {} }, required: ['tag'] },
      }),
      lockedOperation({
        tool: 'get_climbing',
        method: 'GET',
        path: '/public/../admin/{id}',
        server,
        parameters: [{ name: 'id', in: 'path', argument: 'id', required: true, style: 'simple', explode: false, allowReserved: false }],
        inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      }),
      lockedOperation({
        tool: 'get_pair',
        method: 'GET',
        path: '/pairs/{a}{b}',
        server,
        parameters: [
          { name: 'a', in: 'path', argument: 'a', required: true, style: 'simple', explode: false, allowReserved: false },
          { name: 'b', in: 'path', argument: 'b', required: true, style: 'simple', explode: false, allowReserved: false },
        ],
        inputSchema: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a', 'b'] },
      }),
      lockedOperation({
        tool: 'create',
        method: 'POST',
        path: '/items/{kind}',
        server: `${server}/v1`,
        parameters: [
          { name: 'kind', in: 'path', argument: 'kind', required: true, style: 'simple', explode: false, allowReserved: false },
          { name: 'tags', in: 'query', argument: 'tags', required: false, style: 'form', explode: true, allowReserved: false },
          { name: 'X-Trace', in: 'header', argument: 'trace', required: false, style: 'simple', explode: false, allowReserved: false },
          { name: 'pref', in: 'cookie', argument: 'pref', required: false, style: 'form', explode: true, allowReserved: false },
        ],
        body: { argument: 'body', mediaType: 'application/x-www-form-urlencoded', required: true },
        inputSchema: {
          type: 'object',
          properties: {
            kind: { type: 'string' },
            tags: { type: 'array', items: { type: 'string' } },
            trace: { type: 'string' },
            pref: { type: 'string' },
            body: { type: 'object' },
          },
          required: ['kind', 'body'],
          additionalProperties: false,
        },
      }),
    ]),
  );
});

afterAll(async () => {
  await upstream?.close();
  await other?.close();
  await agent.close();
});

const context = { logins: new Set(['api/bearer']) };

describe('executing an OpenAPI tool', () => {
  it('builds the request from the frozen operation: server base path, path, query, header, cookie, form body', async () => {
    const outcome = await executor.execute(
      tool('create'),
      { kind: 'a b', tags: ['x', 'y'], trace: 't-1', pref: 'dark', body: { name: 'n', qty: 2 } },
      context,
    );
    expect(outcome.outcome).toBe('ok');
    const request = upstream.requests.at(-1)!;
    expect(request).toMatchObject({ method: 'POST', path: '/v1/items/a%20b', query: 'tags=x&tags=y', body: 'name=n&qty=2' });
    expect(request.headers).toMatchObject({
      'content-type': 'application/x-www-form-urlencoded',
      'x-trace': 't-1',
      cookie: 'pref=dark',
      authorization: `Bearer ${SECRET}`,
    });
  });

  it('invalid arguments never reach the upstream', async () => {
    const before = upstream.requests.length;
    const outcome = await executor.execute(tool('create'), { kind: 5 }, context);
    expect(outcome.outcome).toBe('validation');
    expect(outcome.result.isError).toBe(true);
    expect(upstream.requests.length).toBe(before);
  });

  it('a slow upstream times out cleanly within the total timeout', async () => {
    const started = Date.now();
    const outcome = await executor.execute(tool('slow'), {}, context);
    expect(outcome.outcome).toBe('timeout');
    expect(outcome.result.isError).toBe(true);
    expect(JSON.stringify(outcome.result.content)).toContain('300 ms');
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('a response over maxResponseBytes is refused with a clear error (declared length and chunked)', async () => {
    for (const name of ['big', 'big_chunked']) {
      const outcome = await executor.execute(tool(name), {}, context);
      expect(outcome.outcome).toBe('too-large');
      expect(outcome.result.isError).toBe(true);
      expect(JSON.stringify(outcome.result.content)).toContain('larger than the limit of 10000 bytes');
    }
  });

  it('an upstream 5xx is an isError result with the status and a bounded excerpt', async () => {
    const outcome = await executor.execute(tool('error'), {}, context);
    expect(outcome.upstreamStatus).toBe(500);
    const text = (outcome.result.content[0] as { text: string }).text;
    expect(text).toContain('HTTP 500 Internal Server Error');
    expect(text).toContain('boom');
    expect(text.length).toBeLessThan(2_200);
  });

  it('credentials an upstream echoes back are redacted from the result', async () => {
    const outcome = await executor.execute(tool('echo'), {}, context);
    expect(JSON.stringify(outcome.result)).not.toContain(SECRET);
    expect(outcome.result.structuredContent).toEqual({ sawAuthorization: '[redacted]' });
  });

  it('binary responses are embedded as base64 up to the limit, refused beyond it', async () => {
    const small = await executor.execute(tool('binary'), {}, context);
    expect(small.result.content[0]).toMatchObject({ type: 'resource', resource: { mimeType: 'image/png', blob: 'iVBORwD/' } });
    const big = await executor.execute(tool('binary_big'), {}, context);
    expect(big.result.isError).toBe(true);
    expect(JSON.stringify(big.result.content)).toContain('limit for binary content');
  });

  it('a JSON array response is structured content as-is (the MCP layer wraps it for 2025-11-25)', async () => {
    const outcome = await executor.execute(tool('array'), {}, context);
    expect(outcome.result.structuredContent).toEqual([1, 2, 3]);
  });

  it('same-origin redirects are followed; a redirect to another origin is refused and never receives credentials', async () => {
    const same = await executor.execute(tool('redirect_same'), {}, context);
    expect(same.outcome).toBe('ok');
    const before = other.requests.length;
    const cross = await executor.execute(tool('redirect_other'), {}, context);
    expect(cross.outcome).toBe('redirect');
    expect(JSON.stringify(cross.result.content)).toContain('another origin');
    expect(other.requests.length).toBe(before);
  });
});

describe('path parameters cannot leave the frozen path template', () => {
  // Each variant the outside probe sent, plus the ones that reach a dot segment another way.
  const escapes: Array<[string, Record<string, unknown>]> = [
    ['get_file', { dir: '..', name: 'admin' }],
    ['get_file', { dir: '..', name: 'leak' }],
    ['get_file', { dir: '.', name: 'x' }],
    ['get_file', { dir: '', name: 'x' }],
    ['get_file', { dir: 'a', name: '..' }],
    ['get_file', { dir: '%2e%2e', name: '..' }],
    ['delete_item', { itemId: '..' }],
    ['delete_item', { itemId: '.' }],
    ['delete_item', { itemId: '' }],
    ['get_labelled', { tag: [] }],
    ['get_labelled', { tag: '.' }],
    ['get_labelled', { tag: '' }],
    ['get_pair', { a: '.', b: '.' }],
    ['get_pair', { a: '', b: '' }],
    // The second line: a template whose own literal segments climb is caught once the URL is parsed.
    ['get_climbing', { id: '7' }],
  ];

  it.each(escapes)('%s %j is an argument error and never reaches the upstream', async (name, args) => {
    const before = upstream.requests.length;
    const outcome = await executor.execute(tool(name), args, context);
    expect(outcome.outcome).toBe('validation');
    expect(outcome.result.isError).toBe(true);
    const text = (outcome.result.content[0] as { text: string }).text;
    expect(text).toContain(`invalid arguments for ${name}`);
    expect(text).toContain('PATH_PARAMETER_INVALID');
    expect(upstream.requests.length).toBe(before);
  });

  it('values with "/", "%", CR/LF and dots inside a segment stay percent-encoded in one segment', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ dir: '../admin', name: 'a/b' }, '/v1/files/..%2Fadmin/a%2Fb'],
      [{ dir: '%2e%2e', name: '100%' }, '/v1/files/%252e%252e/100%25'],
      [{ dir: 'line\r\nX-Evil: 1', name: '...' }, '/v1/files/line%0D%0AX-Evil%3A%201/...'],
      [{ dir: '.hidden', name: 'a..b' }, '/v1/files/.hidden/a..b'],
    ];
    for (const [args, path] of cases) {
      const outcome = await executor.execute(tool('get_file'), args, context);
      expect(outcome.outcome).toBe('ok');
      expect(upstream.requests.at(-1)!.path).toBe(path);
    }
  });
});

describe('credentials an upstream echoes are redacted in their common encodings', () => {
  // Reserved, non-ASCII and base64-alphabet characters, so every encoding differs from the plain value.
  const API_KEY = 'k3y/With+Special=Chars&é~!(x)';
  let echo: Awaited<ReturnType<typeof startRecordingUpstream>>;
  const keyedExecutor = createExecutor({
    credentials: { resolve: async () => ({ headers: { 'x-api-key': API_KEY }, query: {}, cookies: {}, loginId: 'api/key' }) },
    dispatcherFor: () => agent,
    limitsFor: () => limits,
  });
  const keyed = new PublicationRegistry();

  /** Each encoding the echoing upstream answers with, computed here independently of the executor. */
  function encodings(key: string): Record<string, string> {
    const bytes = Buffer.from(key, 'utf8');
    const base64 = bytes.toString('base64');
    return {
      plain: key,
      base64,
      base64Unpadded: base64.replace(/=+$/, ''),
      base64url: bytes.toString('base64url'),
      hex: bytes.toString('hex'),
      hexUpper: bytes.toString('hex').toUpperCase(),
      percent: encodeURIComponent(key),
      percentLower: encodeURIComponent(key).replace(/%[0-9A-F]{2}/g, (escaped) => escaped.toLowerCase()),
      percentForm: new URLSearchParams({ k: key }).toString().slice(2),
      percentEveryByte: [...bytes].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join(''),
      // Inside longer encoded texts, at each byte alignment.
      base64InJson: Buffer.from(JSON.stringify({ apiKey: key })).toString('base64'),
      base64InBasic: Buffer.from(`user:${key}`).toString('base64'),
      base64urlInToken: Buffer.from(`ab${key}cd`).toString('base64url'),
      hexInText: Buffer.from(`key=${key};`).toString('hex'),
    };
  }

  beforeAll(async () => {
    echo = await startRecordingUpstream((request, response) => {
      const key = String(request.headers['x-api-key']);
      if (request.path === '/binary') {
        response.writeHead(200, { 'content-type': 'application/octet-stream' });
        response.end(Buffer.concat([Buffer.from([0x00, 0xff]), Buffer.from(Buffer.from(key).toString('base64')), Buffer.from([0xfe])]));
        return;
      }
      const body = JSON.stringify(encodings(key));
      if (request.path === '/error') {
        response.writeHead(400, { 'content-type': 'text/plain' });
        response.end(body);
        return;
      }
      response.writeHead(200, { 'content-type': request.path === '/text' ? 'text/plain' : 'application/json' });
      response.end(body);
    });
    keyed.replace(
      lockWith([
        lockedOperation({ tool: 'echo_json', method: 'GET', path: '/json', server: echo.url }),
        lockedOperation({ tool: 'echo_text', method: 'GET', path: '/text', server: echo.url }),
        lockedOperation({ tool: 'echo_error', method: 'GET', path: '/error', server: echo.url }),
        lockedOperation({ tool: 'echo_binary', method: 'GET', path: '/binary', server: echo.url }),
      ]),
    );
  });

  afterAll(async () => {
    await echo?.close();
  });

  it.each(['echo_json', 'echo_text', 'echo_error'])('%s: no encoding of the key reaches the client', async (name) => {
    const outcome = await keyedExecutor.execute(keyed.snapshot().tools.get(name)!, {}, { logins: new Set(['api/key']) });
    expect(echo.requests.at(-1)!.headers['x-api-key']).toBe(API_KEY);
    const text = (outcome.result.content[0] as { text: string }).text;
    const sent = encodings(API_KEY);
    for (const [form, value] of Object.entries(sent)) {
      expect(text, `${form} leaked`).not.toContain(value);
    }
    if (name === 'echo_json') {
      const fields = outcome.result.structuredContent as Record<string, string>;
      expect(Object.keys(fields)).toEqual(Object.keys(sent));
      for (const [form, value] of Object.entries(fields)) {
        expect(value, form).toContain('[redacted]');
        // What is left around a redaction in a longer encoded text does not decode back to the key.
        for (const decoded of [Buffer.from(value, 'base64'), Buffer.from(value, 'base64url'), Buffer.from(value, 'hex')]) {
          expect(decoded.toString('utf8')).not.toContain(API_KEY);
        }
      }
    }
  });

  it('a binary response carrying the key (here base64 inside bytes) is refused, since bytes cannot be redacted', async () => {
    const outcome = await keyedExecutor.execute(keyed.snapshot().tools.get('echo_binary')!, {}, { logins: new Set(['api/key']) });
    expect(outcome.result.isError).toBe(true);
    // Receipted as UPSTREAM_RESPONSE_CARRIES_CREDENTIAL (the MCP sources' binary refusal too), not as too large.
    expect(outcome.outcome).toBe('credential-echoed');
    const text = JSON.stringify(outcome.result);
    expect(text).toContain('contains a credential');
    expect(text).not.toContain(Buffer.from(API_KEY).toString('base64'));
  });

  it('an HTTP Basic password an upstream echoes decoded is redacted too', async () => {
    const password = 'p4ss/Word+é';
    const basic = createExecutor({
      credentials: {
        resolve: async () => ({
          headers: { authorization: `Basic ${Buffer.from(`alice:${password}`).toString('base64')}` },
          query: {},
          cookies: {},
          loginId: 'api/basic',
        }),
      },
      dispatcherFor: () => agent,
      limitsFor: () => limits,
    });
    const decoded = await startRecordingUpstream((request, response) => {
      const header = String(request.headers.authorization).slice('Basic '.length);
      const pair = Buffer.from(header, 'base64').toString('utf8');
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ pair, password: pair.slice(pair.indexOf(':') + 1), hex: Buffer.from(pair.slice(6)).toString('hex') }));
    });
    try {
      const registry = new PublicationRegistry();
      registry.replace(lockWith([lockedOperation({ tool: 'who', method: 'GET', path: '/who', server: decoded.url })]));
      const outcome = await basic.execute(registry.snapshot().tools.get('who')!, {}, { logins: new Set(['api/basic']) });
      const text = JSON.stringify(outcome.result);
      expect(text).not.toContain(password);
      expect(text).not.toContain(Buffer.from(password).toString('hex'));
      expect(outcome.result.structuredContent).toEqual({ pair: '[redacted]', password: '[redacted]', hex: '[redacted]' });
    } finally {
      await decoded.close();
    }
  });
});
