import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalDigest, type LockedOperation, type Lockfile } from '@gateway/core';
import type { McpAuthorizer, McpCaller } from '../../src/calls/caller.js';
import type { PublicationRegistry } from '../../src/publications/registry.js';

const DIGEST = `sha256:${'0'.repeat(64)}`;

/** A hand-built locked operation (what the importer would write), for tests that do not run the CLI. */
export function lockedOperation(partial: Partial<LockedOperation> & Pick<LockedOperation, 'tool' | 'method' | 'path'>): LockedOperation {
  const operation: LockedOperation = {
    operationId: partial.tool,
    title: null,
    description: `${partial.method} ${partial.path}`,
    status: 'supported',
    reason: null,
    selected: true,
    server: null,
    parameters: [],
    body: null,
    security: [],
    securitySchemes: {},
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    fingerprint: '',
    ...partial,
  };
  if (!operation.fingerprint) {
    const { method, path, server, parameters, body, security, securitySchemes, inputSchema } = operation;
    operation.fingerprint = canonicalDigest({ method, path, server, parameters, body, security, securitySchemes, inputSchema });
  }
  return operation;
}

/** A lock with one source whose in-use publication offers `operations`. */
export function lockWith(
  operations: LockedOperation[],
  options: { source?: string; publicationId?: string; proposed?: LockedOperation[] } = {},
): Lockfile {
  const publications: Lockfile['sources'][number]['publications'] = [
    {
      id: options.publicationId ?? 'publication-1',
      status: 'in use',
      toolCount: operations.filter((operation) => operation.selected).length,
      documentDigest: DIGEST,
      operations,
    },
  ];
  if (options.proposed) {
    publications.push({
      id: 'publication-99',
      status: 'proposed',
      toolCount: options.proposed.length,
      documentDigest: DIGEST,
      operations: options.proposed,
    });
  }
  return {
    lockVersion: 1,
    lastPublication: 99,
    sources: [{ name: options.source ?? 'orders', kind: 'openapi', document: 'openapi.yaml', documentDigest: DIGEST, publications }],
  };
}

/** Every tool of the current snapshot, approved as it is now: the test harness's stand-in for a session. */
export function allowAllAuthorizer(registry: PublicationRegistry, logins: ReadonlySet<string> = new Set()): McpAuthorizer {
  let cachedGeneration = -1;
  let caller: McpCaller | undefined;
  return {
    async authenticate() {
      const snapshot = registry.snapshot();
      if (!caller || cachedGeneration !== snapshot.generation) {
        const tools = new Map<string, string>();
        for (const name of snapshot.names) tools.set(name, snapshot.tools.get(name)!.entry.fingerprint);
        caller = {
          sessionId: 'session-test',
          subject: 'tester',
          clientId: 'test-client',
          tools,
          logins,
          expiresAt: Date.now() + 3_600_000,
        };
        cachedGeneration = snapshot.generation;
      }
      return { ok: true, caller };
    },
    sessionState: () => 'open',
  };
}

export interface RecordedRequest {
  method: string;
  url: string;
  path: string;
  query: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A small upstream on a free loopback port that records every request; `respond` decides the answer. */
export async function startRecordingUpstream(
  respond: (request: RecordedRequest, response: ServerResponse) => void | Promise<void> = (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{"ok":true}');
  },
): Promise<{ url: string; requests: RecordedRequest[]; close(): Promise<void>; server: Server }> {
  const requests: RecordedRequest[] = [];
  const server = createServer(async (request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const url = request.url ?? '/';
    const questionMark = url.indexOf('?');
    const recorded: RecordedRequest = {
      method: request.method ?? '',
      url,
      path: questionMark === -1 ? url : url.slice(0, questionMark),
      query: questionMark === -1 ? '' : url.slice(questionMark + 1),
      headers: request.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    requests.push(recorded);
    try {
      await respond(recorded, response);
    } catch {
      if (!response.headersSent) response.writeHead(500);
      response.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * One JSON-RPC request to /mcp as a raw client writes it: 2026-07-28 with the `_meta` envelope and the
 * standard headers (`Mcp-Method`, and `Mcp-Name` when the params name a tool), 2025-11-25 bare, as SDK 1.x
 * clients send it after a stateless `initialize`. With `token`, the bearer token too.
 */
export function mcpRequest(
  era: '2026-07-28' | '2025-11-25',
  method: string,
  params: Record<string, unknown>,
  token?: string,
): { headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': era,
  };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const isModern = era === '2026-07-28';
  if (isModern) {
    headers['mcp-method'] = method;
    if (typeof params.name === 'string') headers['mcp-name'] = params.name;
  }
  const envelope = { 'io.modelcontextprotocol/protocolVersion': era, 'io.modelcontextprotocol/clientCapabilities': {} };
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: isModern ? { ...params, _meta: envelope } : params });
  return { headers, body };
}
