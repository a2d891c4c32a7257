/**
 * Hostile arguments and names, end to end: a real import of a document with extra operations, the gateway
 * serving it, real MCP clients of both eras, and the example orders API recording every request it receives.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mcpRequest } from './support/fixtures.js';
import { startHarness, type Harness } from './support/harness.js';

/** Names that are properties of Object.prototype: a plain `{}` keyed by them loses or misreads them. */
const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'hasOwnProperty'];

const EXTRA_PATHS = `
  /files/{dir}/{name}:
    get:
      operationId: getFile
      summary: Read a file
      parameters:
        - { name: dir, in: path, required: true, schema: { type: string } }
        - { name: name, in: path, required: true, schema: { type: string } }
      responses:
        '200': { description: The file. }
  /items/{itemId}:
    delete:
      operationId: deleteItem
      summary: Delete an item
      parameters:
        - { name: itemId, in: path, required: true, schema: { type: string } }
      responses:
        '204': { description: Deleted. }
  /probe:
    post:
      operationId: probeNames
      summary: Names that shadow Object.prototype
      parameters:
${PROTOTYPE_NAMES.map((name) => `        - { name: '${name}', in: query, required: false, schema: { type: string } }`).join('\n')}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: ['__proto__']
              properties:
${PROTOTYPE_NAMES.map((name) => `                '${name}': { type: string }`).join('\n')}
      responses:
        '200': { description: Echo. }
`;

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness({ editDocument: (document) => document.replace(/^paths:\n/m, `paths:${EXTRA_PATHS}`) });
}, 120_000);

afterAll(async () => {
  await harness?.stop();
});

type Connected = {
  call(name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; content: Array<{ type: string; text?: string }> }>;
  close(): Promise<void>;
};

async function modern(): Promise<Connected> {
  const client = new Client({ name: 'hostile-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(harness.mcpUrl)));
  return {
    call: (name, args) => client.callTool({ name, arguments: args }) as never,
    close: () => client.close(),
  };
}

async function legacy(): Promise<Connected> {
  const client = new LegacyClient({ name: 'hostile-v1', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(harness.mcpUrl)));
  return {
    call: (name, args) => client.callTool({ name, arguments: args }) as never,
    close: () => client.close(),
  };
}

function textOf(result: { content: Array<{ text?: string }> }): string {
  return result.content.map((block) => block.text ?? '').join('\n');
}

describe.each([
  ['2026-07-28', modern],
  ['2025-11-25', legacy],
] as const)('over /mcp (%s)', (_era, connect) => {
  it.each([
    ['get_file', { dir: '..', name: 'admin' }],
    ['get_file', { dir: '..', name: 'leak' }],
    ['delete_item', { itemId: '..' }],
    ['delete_item', { itemId: '.' }],
    ['delete_item', { itemId: '' }],
  ] as const)('path arguments cannot leave the template: %s %j is an argument error and reaches no upstream', async (name, args) => {
    const client = await connect();
    const before = harness.api.requests.length;
    const result = await client.call(name, { ...args });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain(`invalid arguments for ${name}`);
    expect(textOf(result)).toContain('PATH_PARAMETER_INVALID');
    expect(harness.api.requests.length).toBe(before);
    await client.close();
  });
});

/**
 * One JSON-RPC request over raw HTTP: the SDK clients parse results into plain objects (and so lose a
 * `__proto__` key on their side), so what the gateway sends and receives is checked on the wire.
 */
async function rpc(era: '2026-07-28' | '2025-11-25', method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const url = new URL(harness.mcpUrl);
  const { headers, body } = mcpRequest(era, method, params);
  const text = await new Promise<string>((resolve, reject) => {
    const request = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers }, (response) => {
      let received = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (received += chunk));
      response.on('end', () => resolve(received));
    });
    request.on('error', reject);
    request.end(body);
  });
  const message = JSON.parse(text.replace(/^[\s\S]*?data: /, '')) as { result?: Record<string, unknown>; error?: unknown };
  if (!message.result) throw new Error(`no result: ${text}`);
  return message.result;
}

/** Arguments whose keys are own properties, even `__proto__` (as JSON.parse makes them). */
function own(json: string): Record<string, unknown> {
  return JSON.parse(json) as Record<string, unknown>;
}

function resultText(result: Record<string, unknown>): string {
  return (result.content as Array<{ text?: string }>).map((block) => block.text ?? '').join('\n');
}

describe.each(['2026-07-28', '2025-11-25'] as const)('names shadowing Object.prototype are carried (%s)', (era) => {
  it('parameters and properties named __proto__, constructor, hasOwnProperty are listed in inputSchema', async () => {
    const listed = await rpc(era, 'tools/list', {});
    const probe = (listed.tools as Array<{ name: string; inputSchema: Record<string, unknown> }>).find(
      (tool) => tool.name === 'probe_names',
    );
    expect(probe).toBeDefined();
    const properties = probe!.inputSchema.properties as Record<string, unknown>;
    for (const name of [...PROTOTYPE_NAMES, 'body']) expect(Object.hasOwn(properties, name)).toBe(true);
    const bodySchema = properties.body as { properties: Record<string, unknown>; required: string[] };
    for (const name of PROTOTYPE_NAMES) expect(Object.hasOwn(bodySchema.properties, name)).toBe(true);
    expect(bodySchema.required).toEqual(['__proto__']);
  });

  it('a call sends each of them: query parameters and body properties', async () => {
    const args = own(
      '{"__proto__":"q1","constructor":"q2","hasOwnProperty":"q3","body":{"__proto__":"b1","constructor":"b2","hasOwnProperty":"b3"}}',
    );
    const result = await rpc(era, 'tools/call', { name: 'probe_names', arguments: args });
    // The example API has no such route and answers 404: what matters is exactly what it received.
    expect(resultText(result)).toContain('HTTP 404');
    const request = harness.api.requests.at(-1)!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/probe');
    expect(JSON.stringify(request.query)).toBe('{"__proto__":"q1","constructor":"q2","hasOwnProperty":"q3"}');
    expect(JSON.stringify(request.body)).toBe('{"__proto__":"b1","constructor":"b2","hasOwnProperty":"b3"}');
  });

  it('an optional parameter named constructor is not read from Object.prototype when absent', async () => {
    await rpc(era, 'tools/call', { name: 'probe_names', arguments: own('{"body":{"__proto__":"only"}}') });
    const request = harness.api.requests.at(-1)!;
    expect(request.path).toBe('/probe');
    expect(JSON.stringify(request.query)).toBe('{}');
    expect(JSON.stringify(request.body)).toBe('{"__proto__":"only"}');
  });

  it('a required property named __proto__ is enforced (Object.prototype does not satisfy it)', async () => {
    const before = harness.api.requests.length;
    const result = await rpc(era, 'tools/call', { name: 'probe_names', arguments: own('{"body":{"constructor":"x"}}') });
    expect(result.isError).toBe(true);
    expect(resultText(result)).toContain('__proto__');
    expect(harness.api.requests.length).toBe(before);
  });
});
