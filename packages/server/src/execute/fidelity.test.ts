/**
 * Request fidelity end to end (issue 18): small Stripe-, Kubernetes- and Discord-shaped descriptions are imported
 * with the real importer, served by the real registry, and called through the executor against a recording
 * upstream on 127.0.0.1; the assertions are on the bytes the upstream received.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { importOpenApiText, type LockedOperation, type Operation } from '@gateway/core';
import { PublicationRegistry, type OpenApiIndexedTool } from '../publications/registry.js';
import { lockWith, startRecordingUpstream } from '../../test/support/fixtures.js';
import { createExecutor } from './index.js';
import { NO_CREDENTIALS, buildUpstreamRequest } from './request.js';

let upstream: Awaited<ReturnType<typeof startRecordingUpstream>>;
const agent = new Agent({ connect: { timeout: 1_000 } });
const registry = new PublicationRegistry();
const executor = createExecutor({
  credentials: { resolve: async () => NO_CREDENTIALS },
  dispatcherFor: () => agent,
  limitsFor: () => ({ connectMs: 1_000, totalMs: 2_000, maxResponseBytes: 10_000 }),
});

const ok = { '200': { description: 'OK' } };

async function importPaths(paths: Record<string, unknown>, components: Record<string, unknown> = {}): Promise<Operation[]> {
  const text = JSON.stringify({
    openapi: '3.0.0',
    info: { title: 'Test', version: '1' },
    servers: [{ url: upstream.url }],
    paths,
    components,
  });
  return (await importOpenApiText(text, 'openapi.json', { baseDirectory: '/nonexistent' })).operations;
}

function tool(name: string): OpenApiIndexedTool {
  const found = registry.snapshot().tools.get(name);
  if (found?.kind !== 'openapi') throw new Error(`no OpenAPI tool ${name}`);
  return found;
}

async function call(name: string, argumentsValue: Record<string, unknown>) {
  const before = upstream.requests.length;
  const outcome = await executor.execute(tool(name), argumentsValue, { logins: new Set() });
  expect(outcome.outcome, JSON.stringify(outcome.result)).toBe('ok');
  expect(upstream.requests.length).toBe(before + 1);
  return upstream.requests.at(-1)!;
}

const expand = { name: 'expand', in: 'query', style: 'deepObject', explode: true, schema: { type: 'array', items: { type: 'string' } } };
const created = {
  name: 'created',
  in: 'query',
  style: 'deepObject',
  explode: true,
  schema: {
    anyOf: [
      { type: 'object', properties: { gt: { type: 'integer' }, gte: { type: 'integer' }, lt: { type: 'integer' } } },
      { type: 'integer' },
    ],
  },
};
const patchSchema = { type: 'object' };

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  const operations = await importPaths(
    {
      '/v1/customers': {
        get: { operationId: 'GetCustomers', parameters: [expand, created], responses: ok },
        post: {
          operationId: 'PostCustomers',
          requestBody: {
            content: {
              'application/x-www-form-urlencoded': {
                schema: {
                  type: 'object',
                  properties: {
                    address: { type: 'object', properties: { city: { type: 'string' }, line1: { type: 'string' } } },
                    metadata: { type: 'object', additionalProperties: { type: 'string' } },
                    expand: { type: 'array', items: { type: 'string' } },
                    tax_id_data: {
                      type: 'array',
                      items: { type: 'object', properties: { type: { type: 'string' }, value: { type: 'string' } } },
                    },
                    preferred_locales: { type: 'array', items: { type: 'string' } },
                    settings: { type: 'object', properties: { a: { type: 'integer' } } },
                    name: { type: 'string' },
                  },
                },
                encoding: {
                  address: { style: 'deepObject', explode: true },
                  metadata: { style: 'deepObject', explode: true },
                  expand: { style: 'deepObject', explode: true },
                  tax_id_data: { style: 'deepObject', explode: true },
                  preferred_locales: { style: 'form', explode: false },
                  settings: { contentType: 'application/json' },
                },
              },
            },
          },
          responses: ok,
        },
      },
      '/api/v1/namespaces': {
        post: {
          operationId: 'createCoreV1Namespace',
          requestBody: { required: true, content: { '*/*': { schema: { $ref: '#/components/schemas/Namespace' } } } },
          responses: ok,
        },
      },
      '/api/v1/namespaces/{name}': {
        patch: {
          operationId: 'patchCoreV1Namespace',
          parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
          requestBody: {
            required: true,
            content: {
              'application/json-patch+json': { schema: patchSchema },
              'application/merge-patch+json': { schema: patchSchema },
              'application/strategic-merge-patch+json': { schema: patchSchema },
            },
          },
          responses: ok,
        },
      },
      // A Twilio-like form body whose schema (behind a $ref) requires an array.
      '/messages': {
        post: {
          operationId: 'PostMessages',
          requestBody: {
            required: true,
            content: { 'application/x-www-form-urlencoded': { schema: { $ref: '#/components/schemas/Message' } } },
          },
          responses: ok,
        },
      },
      '/messages/encoded': {
        post: {
          operationId: 'PostEncodedMessages',
          requestBody: {
            required: true,
            content: {
              'application/x-www-form-urlencoded': {
                schema: {
                  allOf: [{ $ref: '#/components/schemas/Message' }],
                  properties: { Filter: { type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } } } } },
                  required: ['Filter'],
                },
                encoding: { Filter: { style: 'deepObject', explode: true }, MessageSamples: { style: 'pipeDelimited', explode: true } },
              },
            },
          },
          responses: ok,
        },
      },
      '/items': {
        get: {
          operationId: 'GetItems',
          parameters: [
            {
              name: 'ids',
              in: 'query',
              required: true,
              style: 'form',
              explode: true,
              schema: { type: 'array', items: { type: 'string' } },
            },
            {
              name: 'ranks',
              in: 'query',
              required: true,
              style: 'form',
              explode: false,
              schema: { type: 'array', items: { type: 'string' } },
            },
            {
              name: 'tags',
              in: 'query',
              required: true,
              style: 'pipeDelimited',
              explode: true,
              schema: { type: 'array', items: { type: 'string' } },
            },
            {
              name: 'words',
              in: 'query',
              required: true,
              style: 'spaceDelimited',
              explode: true,
              schema: { type: 'array', items: { type: 'string' } },
            },
            { name: 'filter', in: 'query', required: true, style: 'deepObject', explode: true, schema: { type: 'object' } },
            { name: 'props', in: 'query', required: true, style: 'form', explode: true, schema: { type: 'object' } },
            { name: 'X-Ids', in: 'header', required: true, schema: { type: 'array', items: { type: 'string' } } },
            { name: 'c', in: 'cookie', required: true, explode: true, schema: { type: 'array', items: { type: 'string' } } },
            { name: 'optional', in: 'query', style: 'form', explode: true, schema: { type: 'array', items: { type: 'string' } } },
            { name: 'X-Optional', in: 'header', schema: { type: 'array', items: { type: 'string' } } },
            { name: 'd', in: 'cookie', explode: true, schema: { type: 'array', items: { type: 'string' } } },
          ],
          responses: ok,
        },
      },
      '/search': {
        get: {
          operationId: 'search',
          parameters: [{ name: 'q', in: 'query', required: true, schema: { type: 'string' } }],
          responses: ok,
        },
      },
    },
    {
      schemas: {
        Namespace: { type: 'object', properties: { kind: { type: 'string' }, metadata: { type: 'object' } } },
        Message: {
          type: 'object',
          required: ['MessageSamples'],
          properties: { MessageSamples: { type: 'array', items: { type: 'string' } }, Name: { type: 'string' } },
        },
      },
    },
  );
  for (const operation of operations) expect(operation.status, operation.tool).toBe('supported');
  registry.replace(lockWith(operations.map((operation): LockedOperation => ({ ...operation, selected: true }))));
});

afterAll(async () => {
  await upstream.close();
  await agent.close();
});

describe('form bodies honour encoding', () => {
  it('deepObject entries nest with brackets, form arrays follow explode, contentType entries go as JSON', async () => {
    const request = await call('post_customers', {
      body: {
        address: { city: 'Paris', line1: '1 rue' },
        metadata: { k: 'v' },
        expand: ['a', 'b'],
        tax_id_data: [{ type: 'eu_vat', value: 'FR1' }],
        preferred_locales: ['fr', 'en'],
        settings: { a: 1 },
        name: 'A & B',
      },
    });
    expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request.body).toBe(
      'address[city]=Paris&address[line1]=1%20rue&metadata[k]=v&expand[]=a&expand[]=b' +
        '&tax_id_data[0][type]=eu_vat&tax_id_data[0][value]=FR1&preferred_locales=fr,en' +
        `&settings=${encodeURIComponent('{"a":1}')}&name=A%20%26%20B`,
    );
    // What a form parser (URLSearchParams, like qs or Rack) reads back.
    const parsed = [...new URLSearchParams(request.body)];
    expect(parsed).toContainEqual(['address[city]', 'Paris']);
    expect(parsed).toContainEqual(['metadata[k]', 'v']);
  });
});

describe('deepObject beyond flat objects', () => {
  it('a Stripe-like array is expand[]=a&expand[]=b; anyOf [object, integer] is created[gt]=5 or created=5', async () => {
    expect((await call('get_customers', { expand: ['a', 'b'], created: { gt: 5, lt: 9 } })).query).toBe(
      'created[gt]=5&created[lt]=9&expand[]=a&expand[]=b',
    );
    expect((await call('get_customers', { created: 5 })).query).toBe('created=5');
  });

  it('never refuses a value valid against the inputSchema: nested objects and arrays of objects nest further', () => {
    const operation = tool('get_customers').operation;
    const request = buildUpstreamRequest(operation, { expand: [], created: { gt: 1 } }, NO_CREDENTIALS);
    expect(request.url.search).toBe('?created[gt]=1');
  });
});

describe('media types', () => {
  it('a Kubernetes-like `*/*` body is sent as JSON with content-type application/json', async () => {
    const request = await call('create_core_v1_namespace', { body: { kind: 'Namespace', metadata: { name: 'x' } } });
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body)).toEqual({ kind: 'Namespace', metadata: { name: 'x' } });
  });

  it('PATCH with an object schema is sent as application/merge-patch+json, never JSON Patch', async () => {
    const request = await call('patch_core_v1_namespace', { name: 'x', body: { metadata: { labels: { a: 'b' } } } });
    expect(request.method).toBe('PATCH');
    expect(request.headers['content-type']).toBe('application/merge-patch+json');
  });
});

describe('empty required query strings', () => {
  it('a required query string refuses "" as an argument error (allowEmptyValue defaults to false)', async () => {
    const before = upstream.requests.length;
    const refused = await executor.execute(tool('search'), { q: '' }, { logins: new Set() });
    expect(refused.outcome).toBe('validation');
    expect(upstream.requests.length).toBe(before);
    expect((await call('search', { q: 'x' })).query).toBe('q=x');
  });
});

describe('a required array or object is never silently omitted', () => {
  /** The call is refused as an argument error, and the upstream receives nothing. */
  async function expectRefused(name: string, argumentsValue: Record<string, unknown>, argument: string) {
    const before = upstream.requests.length;
    const outcome = await executor.execute(tool(name), argumentsValue, { logins: new Set() });
    expect(outcome.outcome, JSON.stringify(outcome.result)).toBe('validation');
    const text = JSON.stringify(outcome.result);
    expect(text).toContain('ARGUMENT_REQUIRED_EMPTY');
    expect(text).toContain(`argument '${argument}' is required`);
    expect(upstream.requests.length).toBe(before);
  }

  it('a form body with "MessageSamples": [] (required by its schema) is refused before any request', async () => {
    await expectRefused('post_messages', { body: { MessageSamples: [], Name: 'n' } }, 'body.MessageSamples');
    // With an element it goes out, the key repeated per element; an optional empty property is left out.
    expect((await call('post_messages', { body: { MessageSamples: ['a', 'b'], Name: 'n' } })).body).toBe(
      'MessageSamples=a&MessageSamples=b&Name=n',
    );
  });

  it('form bodies with encoding: a required deepObject {} or exploded pipeDelimited [] is refused (allOf and $ref followed)', async () => {
    await expectRefused('post_encoded_messages', { body: { MessageSamples: ['a'], Filter: {} } }, 'body.Filter');
    await expectRefused('post_encoded_messages', { body: { MessageSamples: [], Filter: { tags: ['x'] } } }, 'body.MessageSamples');
    expect((await call('post_encoded_messages', { body: { MessageSamples: ['a'], Filter: { tags: ['x'] } } })).body).toBe(
      'MessageSamples=a&Filter[tags][]=x',
    );
  });

  const full = { ids: ['1'], ranks: ['r'], tags: ['t'], words: ['w'], filter: { a: '1' }, props: { p: '1' }, X_Ids: ['h'], c: ['k'] };

  function argumentsWith(name: string, value: unknown): Record<string, unknown> {
    const operation = tool('get_items').operation;
    const byName = Object.fromEntries(operation.parameters.map((parameter) => [parameter.name, parameter.argument]));
    const values: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(full)) values[byName[key === 'X_Ids' ? 'X-Ids' : key]!] = item;
    values[byName[name]!] = value;
    return values;
  }

  it.each([
    ['ids', [], 'query form explode'],
    ['tags', [], 'query pipeDelimited explode'],
    ['words', [], 'query spaceDelimited explode'],
    ['filter', {}, 'query deepObject'],
    ['filter', { nested: [] }, 'query deepObject holding only empties'],
    ['props', {}, 'query form explode object'],
    ['X-Ids', [], 'header'],
    ['c', [], 'cookie explode'],
  ] as const)('a required %s of %j (%s) is refused; the upstream receives nothing', async (name, value, _style) => {
    const argumentsValue = argumentsWith(name, value);
    const argument = tool('get_items').operation.parameters.find((parameter) => parameter.name === name)!.argument;
    await expectRefused('get_items', argumentsValue, argument);
  });

  it('a style that keeps an empty array (form without explode: `ranks=`) sends it; optional empties are left out cleanly', async () => {
    const operation = tool('get_items').operation;
    const argumentOf = (name: string) => operation.parameters.find((parameter) => parameter.name === name)!.argument;
    const request = await call('get_items', {
      ...argumentsWith('ranks', []),
      [argumentOf('optional')]: [],
      [argumentOf('X-Optional')]: [],
      [argumentOf('d')]: [],
    });
    expect(request.query).toBe('filter[a]=1&ids=1&p=1&ranks=&tags=t&words=w');
    expect(request.headers['x-ids']).toBe('h');
    expect(request.headers['x-optional']).toBeUndefined();
    expect(request.headers.cookie).toBe('c=k');
  });
});
