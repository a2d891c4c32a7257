import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { corpusDirectory, temporaryDirectory } from '../../../../test-support/cli.js';
import { createGuardedAgent, guardedDocumentFetcher } from '@gateway/runtime';
import { GatewayError } from '../errors.js';
import { importOpenApi, importOpenApiText } from './index.js';

// Core has no network code: URL documents are read by the fetcher the CLI and the server inject (the
// SSRF-guarded one of @gateway/runtime), here allowed to reach the loopback test servers.
const loopbackAgent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
const fetchText = guardedDocumentFetcher(loopbackAgent);

const minimal = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  openapi: '3.1.0',
  info: { title: 'T', version: '1' },
  servers: [{ url: 'https://api.example.com' }],
  paths: { '/ping': { get: { responses: { '200': { description: 'OK' } } } } },
  ...extra,
});

async function failure(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('expected the import to fail');
}

/** A loopback HTTP server answering from a map of path → [status, body]. */
async function serve(routes: Record<string, [number, string]>): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    const route = routes[request.url ?? ''];
    response.writeHead(route?.[0] ?? 404, { 'content-type': 'application/json' });
    response.end(route?.[1] ?? '{}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('loading OpenAPI documents', () => {
  let folder: { path: string; cleanup: () => Promise<void> };
  beforeAll(async () => {
    folder = await temporaryDirectory('gateway-openapi-');
  });
  afterAll(async () => {
    await folder.cleanup();
    await loopbackAgent.close();
  });

  it('reads JSON and YAML files relative to the base directory', async () => {
    await writeFile(join(folder.path, 'a.json'), JSON.stringify(minimal()));
    await writeFile(
      join(folder.path, 'a.yaml'),
      'openapi: 3.0.3\ninfo: {title: T, version: "1"}\nservers: [{url: "https://x.example.com"}]\npaths:\n  /p:\n    get:\n      ' +
        'responses:\n        "200": {description: OK}\n',
    );
    const json = await importOpenApi('a.json', { baseDirectory: folder.path });
    const yaml = await importOpenApi('a.yaml', { baseDirectory: folder.path });
    expect(json.openapiVersion).toBe('3.1.0');
    expect(json.documentDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(json.operations.map((operation) => operation.tool)).toEqual(['get_ping']);
    expect(yaml.operations.map((operation) => operation.tool)).toEqual(['get_p']);
  });

  it('refuses malformed YAML with OPENAPI_PARSE_ERROR and the line', async () => {
    const error = await failure(importOpenApiText('openapi: 3.1.0\ninfo: [unclosed\n  title: x\n', 'bad.yaml', { baseDirectory: '.' }));
    expect(error.code).toBe('OPENAPI_PARSE_ERROR');
    expect(error.category).toBe('document');
    expect(error.message).toMatch(/bad\.yaml .*line \d+/);
  });

  it('refuses an invalid OpenAPI document with OPENAPI_INVALID naming the JSON pointer', async () => {
    const document = minimal();
    delete document.info;
    const error = await failure(importOpenApiText(JSON.stringify(document), 'x.json', { baseDirectory: '.' }));
    expect(error.code).toBe('OPENAPI_INVALID');
    expect(error.category).toBe('document');
    expect(error.message).toContain("must have required property 'info'");
  });

  it('refuses Swagger 2.0 and unknown versions with OPENAPI_UNSUPPORTED_VERSION naming the version', async () => {
    const swagger = await failure(importOpenApi('swagger20-petstore.json', { baseDirectory: corpusDirectory }));
    expect(swagger.code).toBe('OPENAPI_UNSUPPORTED_VERSION');
    expect(swagger.category).toBe('document');
    expect(swagger.message).toContain('Swagger 2.0');
    for (const version of ['4.0.0', '3.3.0', '3.1']) {
      const error = await failure(importOpenApiText(JSON.stringify(minimal({ openapi: version })), 'x.json', { baseDirectory: '.' }));
      expect(error.code).toBe('OPENAPI_UNSUPPORTED_VERSION');
      expect(error.message).toContain(version);
    }
  });

  it('accepts patch versions such as 3.2.1', async () => {
    const imported = await importOpenApi('oas32-valid_schema_types.yaml', { baseDirectory: corpusDirectory });
    expect(imported.openapiVersion).toBe('3.2.1');
  });

  it('reports a missing file as OPENAPI_NOT_FOUND', async () => {
    const error = await failure(importOpenApi('nowhere/openapi.yaml', { baseDirectory: folder.path }));
    expect(error.code).toBe('OPENAPI_NOT_FOUND');
    expect(error.category).toBe('document');
    expect(error.message).toContain('nowhere/openapi.yaml');
  });

  it('reports an unreachable URL as OPENAPI_UNREACHABLE (network)', async () => {
    const { url, server } = await serve({});
    server.close();
    await once(server, 'close');
    const error = await failure(importOpenApi(`${url}/openapi.json`, { baseDirectory: '.', timeoutMs: 5000, fetchText }));
    expect(error.code).toBe('OPENAPI_UNREACHABLE');
    expect(error.category).toBe('network');
  });

  it('reads a URL document, resolves relative servers against it, and reports HTTP errors', async () => {
    const { url, server } = await serve({ '/specs/openapi.json': [200, JSON.stringify(minimal({ servers: [{ url: '/v2' }] }))] });
    try {
      const imported = await importOpenApi(`${url}/specs/openapi.json`, { baseDirectory: '.', fetchText });
      expect(imported.operations[0]?.server).toBe(`${url}/v2`);
      const missing = await failure(importOpenApi(`${url}/other.json`, { baseDirectory: '.', fetchText }));
      expect(missing.code).toBe('OPENAPI_UNREACHABLE');
      expect(missing.message).toContain('404');
    } finally {
      server.close();
    }
  });

  it('core never fetches by itself: without an injected fetcher a URL is refused and the server never hit', async () => {
    let hits = 0;
    const server = createServer((_request, response) => {
      hits += 1;
      response.end(JSON.stringify(minimal()));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/openapi.json`;
      const error = await failure(importOpenApi(url, { baseDirectory: '.' }));
      expect(error.code).toBe('OPENAPI_FETCHER_MISSING');
      expect(hits).toBe(0);
    } finally {
      server.close();
    }
  });

  it('uses the injected fetchText for URL documents', async () => {
    const seen: string[] = [];
    const imported = await importOpenApi('https://docs.example.com/openapi.json', {
      baseDirectory: '.',
      fetchText: async (url, limits) => {
        seen.push(`${url} ${limits.maxBytes} ${limits.timeoutMs}`);
        return JSON.stringify(minimal());
      },
      maxDocumentBytes: 1000,
      timeoutMs: 1234,
    });
    expect(seen).toEqual(['https://docs.example.com/openapi.json 1000 1234']);
    expect(imported.operations).toHaveLength(1);
  });

  it('refuses a YAML alias bomb with OPENAPI_ALIAS_LIMIT', async () => {
    const lines = ['openapi: 3.1.0', 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
    for (let level = 1; level < 9; level += 1) {
      const previous = `*a${level - 1}`;
      lines.push(`a${level}: &a${level} [${Array(10).fill(previous).join(', ')}]`);
    }
    const error = await failure(importOpenApiText(lines.join('\n'), 'bomb.yaml', { baseDirectory: '.' }));
    expect(error.code).toBe('OPENAPI_ALIAS_LIMIT');
    expect(error.category).toBe('document');
  });

  it('refuses documents over the size limit before parsing them, naming the limit', async () => {
    const text = JSON.stringify(minimal({ info: { title: 'x'.repeat(5000), version: '1' } }));
    await writeFile(join(folder.path, 'big.json'), text);
    const fromFile = await failure(importOpenApi('big.json', { baseDirectory: folder.path, maxDocumentBytes: 4096 }));
    expect(fromFile.code).toBe('OPENAPI_TOO_LARGE');
    expect(fromFile.message).toContain('4096');
    const fromText = await failure(importOpenApiText(text, 'big.json', { baseDirectory: '.', maxDocumentBytes: 4096 }));
    expect(fromText.code).toBe('OPENAPI_TOO_LARGE');
    const { url, server } = await serve({ '/big.json': [200, text] });
    try {
      const fromUrl = await failure(importOpenApi(`${url}/big.json`, { baseDirectory: '.', maxDocumentBytes: 4096, fetchText }));
      expect(fromUrl.code).toBe('OPENAPI_TOO_LARGE');
    } finally {
      server.close();
    }
  });

  it('refuses remote references an operation needs unless allowRemoteRefs, and follows them when allowed', async () => {
    const { url, server } = await serve({ '/schemas.json': [200, JSON.stringify({ Pet: { type: 'object', required: ['name'] } })] });
    try {
      const document = minimal({
        paths: {
          '/pets': {
            post: {
              requestBody: { content: { 'application/json': { schema: { $ref: `${url}/schemas.json#/Pet` } } } },
              responses: { '200': { description: 'OK' } },
            },
          },
        },
      });
      const text = JSON.stringify(document);
      const refused = await failure(importOpenApiText(text, 'remote.json', { baseDirectory: folder.path }));
      expect(refused.code).toBe('OPENAPI_REMOTE_REF_REFUSED');
      expect(refused.category).toBe('document');
      expect(refused.message).toContain(`${url}/schemas.json#/Pet`);
      const allowed = await importOpenApiText(text, 'remote.json', { baseDirectory: folder.path, allowRemoteRefs: true, fetchText });
      expect(allowed.operations[0]?.status).toBe('supported');
      expect(JSON.stringify(allowed.operations[0]?.inputSchema)).toContain('"required":["name"]');
    } finally {
      server.close();
    }
  });

  it('ignores a remote reference no operation needs', async () => {
    const document = minimal({
      components: { schemas: { Elsewhere: { $ref: 'https://example.invalid/schemas.json#/Thing' } } },
    });
    const imported = await importOpenApiText(JSON.stringify(document), 'x.json', { baseDirectory: folder.path });
    expect(imported.operations).toHaveLength(1);
  });

  it('joins relative file references beside a local document and refuses files outside its folder', async () => {
    const api = join(folder.path, 'split');
    await mkdir(join(api, 'schemas'), { recursive: true });
    await writeFile(join(api, 'schemas', 'pet.yaml'), 'type: object\nrequired: [name]\nproperties:\n  name: {type: string}\n');
    const root = minimal({
      paths: {
        '/pets': {
          post: {
            requestBody: { content: { 'application/json': { schema: { $ref: 'schemas/pet.yaml' } } } },
            responses: { '200': { description: 'OK' } },
          },
        },
      },
    });
    await writeFile(join(api, 'openapi.json'), JSON.stringify(root));
    const imported = await importOpenApi('split/openapi.json', { baseDirectory: folder.path });
    const operation = imported.operations[0];
    expect(operation?.status).toBe('supported');
    expect(JSON.stringify(operation?.inputSchema)).toContain('"required":["name"]');

    const escaping = JSON.stringify(root).replace('schemas/pet.yaml', '../a.json');
    await writeFile(join(api, 'escaping.json'), escaping);
    const error = await failure(importOpenApi('split/escaping.json', { baseDirectory: folder.path }));
    expect(error.code).toBe('OPENAPI_FILE_REF_REFUSED');
  });
});
