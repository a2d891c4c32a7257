/**
 * Real loopback servers that record every request, and the spellings of a loopback URL an attacker can put in
 * a description URL or a remote `$ref`: the SSRF tests of the CLI and the server both use this one table, so
 * they try exactly the same cases.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A minimal valid OpenAPI 3.1 document with one supported operation. */
export const SMALL_DOCUMENT = `openapi: 3.1.0
info: { title: Pets, version: '1' }
servers: [{ url: 'https://api.example.com' }]
paths:
  /pets:
    get:
      operationId: listPets
      responses: { '200': { description: ok } }
`;

/** A local document whose only operation needs a schema from `schemasUrl` (a remote `$ref`). */
export function documentWithRemoteRef(schemasUrl: string): string {
  return `openapi: 3.1.0
info: { title: Pets, version: '1' }
servers: [{ url: 'https://api.example.com' }]
paths:
  /pets:
    post:
      operationId: addPet
      requestBody:
        content:
          application/json:
            schema: { $ref: '${schemasUrl}#/Pet' }
      responses: { '200': { description: ok } }
`;
}

export interface RecordingServer {
  /** Port on `host`. */
  port: number;
  host: string;
  /** Request paths received, in order. */
  hits: string[];
  close(): Promise<void>;
}

/**
 * A server on `host` (127.0.0.1 by default) that records every request: `/openapi.yaml` is SMALL_DOCUMENT,
 * `/schemas.yaml` holds `Pet`, `/redirect?to=<url>` answers 302 to `<url>`, anything else 404.
 */
export async function startRecordingServer(host = '127.0.0.1'): Promise<RecordingServer> {
  const hits: string[] = [];
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://recording.invalid');
    hits.push(url.pathname);
    if (url.pathname === '/openapi.yaml') {
      response.writeHead(200, { 'content-type': 'application/yaml' }).end(SMALL_DOCUMENT);
    } else if (url.pathname === '/schemas.yaml') {
      response
        .writeHead(200, { 'content-type': 'application/yaml' })
        .end('Pet:\n  type: object\n  required: [name]\n  properties:\n    name: { type: string }\n');
    } else if (url.pathname === '/redirect' && url.searchParams.has('to')) {
      response.writeHead(302, { location: url.searchParams.get('to')! }).end();
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    host,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** One way of pointing a source at the recording server. */
export interface HostileUrlCase {
  name: string;
  /** The source's `document` (a URL, or a local file name written with `file`). */
  document: string;
  /** For the remote-`$ref` case: the local document to write under `document`. */
  file?: string;
  /** The source needs `allowRemoteRefs: true`. */
  allowRemoteRefs?: boolean;
}

/**
 * Every spelling of "this machine" that plain `fetch` reached from `gateway import` before the guard: the
 * loopback address, `localhost`, the decimal form of 127.0.0.1, the unspecified address, an IPv4-mapped IPv6
 * literal, a redirect from one loopback port to another, and a remote `$ref` on loopback.
 * `redirector` is a second recording server on 127.0.0.1 whose /redirect points at `target`.
 */
export function hostileUrlCases(target: RecordingServer, redirector: RecordingServer): HostileUrlCase[] {
  const port = target.port;
  return [
    { name: 'loopback address 127.0.0.1', document: `http://127.0.0.1:${port}/openapi.yaml` },
    { name: 'localhost', document: `http://localhost:${port}/openapi.yaml` },
    { name: 'decimal 2130706433 (127.0.0.1)', document: `http://2130706433:${port}/openapi.yaml` },
    { name: 'unspecified 0.0.0.0', document: `http://0.0.0.0:${port}/openapi.yaml` },
    { name: 'IPv4-mapped [::ffff:127.0.0.1]', document: `http://[::ffff:127.0.0.1]:${port}/openapi.yaml` },
    {
      name: '302 to another loopback port',
      document: `http://127.0.0.1:${redirector.port}/redirect?to=${encodeURIComponent(`http://127.0.0.1:${port}/openapi.yaml`)}`,
    },
    {
      name: 'remote $ref on loopback',
      document: './openapi.yaml',
      file: documentWithRemoteRef(`http://127.0.0.1:${port}/schemas.yaml`),
      allowRemoteRefs: true,
    },
  ];
}

/** Enough for every case above to be fetched: loopback, and the unspecified address 0.0.0.0 itself. */
export const LOOPBACK_ALLOWLIST = ['127.0.0.0/8', '0.0.0.0/32'];
