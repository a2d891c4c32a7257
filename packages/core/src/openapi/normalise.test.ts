import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../canonical.js';
import { createAjv, validatableSchema } from '../json-schema-validator.js';
import type { Operation } from '../model.js';
import { MAX_INPUT_SCHEMA_DEPTH, nestingDepth } from '../lockfile.js';
import { fingerprintOf, importOpenApiText } from './index.js';
import { normaliseDocument } from './normalise.js';

const options = { baseDirectory: '/nonexistent' };

function document(version: string, paths: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    openapi: version,
    info: { title: 'Test', version: '1' },
    servers: [{ url: 'https://api.example.com/v1/' }],
    paths,
    ...extra,
  });
}

const ok = { '200': { description: 'OK' } };

async function operations(text: string, location = 'openapi.json'): Promise<Operation[]> {
  return (await importOpenApiText(text, location, options)).operations;
}

async function only(text: string, location?: string): Promise<Operation> {
  const [operation, ...rest] = await operations(text, location);
  expect(rest).toHaveLength(0);
  return operation as Operation;
}

describe('normalising operations', () => {
  it('merges path-level parameters with operation-level ones, the operation overriding the same name and location', async () => {
    const operation = await only(
      document('3.0.3', {
        '/pets/{id}': {
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'path level' },
            { name: 'limit', in: 'query', schema: { type: 'integer' } },
            { name: 'Accept', in: 'header', schema: { type: 'string' } },
          ],
          get: {
            parameters: [
              { name: 'id', in: 'path', required: true, schema: { type: 'integer' }, description: 'operation level' },
              { name: 'X-Trace', in: 'header', schema: { type: 'string' } },
              { name: 'Authorization', in: 'header', schema: { type: 'string' } },
            ],
            responses: ok,
          },
        },
      }),
    );
    expect(operation.parameters.map((parameter) => `${parameter.in}:${parameter.name}`)).toEqual([
      'path:id',
      'query:limit',
      'header:X-Trace',
    ]);
    const properties = (operation.inputSchema as { properties: Record<string, unknown> }).properties;
    expect(properties.id).toEqual({ type: 'integer', description: 'operation level' });
    expect(operation.inputSchema).toMatchObject({ required: ['id'], additionalProperties: false });
  });

  it('applies the style and explode defaults of each location (OAS 3.x §4.8.12.4)', async () => {
    const operation = await only(
      document('3.1.0', {
        '/items/{id}': {
          get: {
            parameters: [
              { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
              { name: 'tags', in: 'query', schema: { type: 'array', items: { type: 'string' } } },
              { name: 'ids', in: 'query', style: 'pipeDelimited', explode: false, schema: { type: 'array' } },
              { name: 'X-Id', in: 'header', schema: { type: 'string' } },
              { name: 'session', in: 'cookie', schema: { type: 'string' } },
            ],
            responses: ok,
          },
        },
      }),
    );
    const styles = Object.fromEntries(operation.parameters.map((parameter) => [parameter.name, [parameter.style, parameter.explode]]));
    expect(styles).toEqual({
      id: ['simple', false],
      ids: ['pipeDelimited', false],
      tags: ['form', true],
      'X-Id': ['simple', false],
      session: ['form', true],
    });
    expect(operation.parameters.every((parameter) => parameter.allowReserved === false)).toBe(true);
  });

  it('renames colliding arguments to <in>_<name>, and a parameter named body when there is a body', async () => {
    const operation = await only(
      document('3.0.3', {
        '/things/{id}': {
          post: {
            parameters: [
              { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
              { name: 'id', in: 'query', schema: { type: 'string' } },
              { name: 'body', in: 'query', schema: { type: 'string' } },
            ],
            requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
            responses: ok,
          },
        },
      }),
    );
    expect(operation.parameters.map((parameter) => [parameter.in, parameter.name, parameter.argument])).toEqual([
      ['path', 'id', 'path_id'],
      ['query', 'body', 'query_body'],
      ['query', 'id', 'query_id'],
    ]);
    expect(operation.body).toEqual({ argument: 'body', mediaType: 'application/json', required: true });
    expect(Object.keys((operation.inputSchema as { properties: object }).properties).sort()).toEqual([
      'body',
      'path_id',
      'query_body',
      'query_id',
    ]);
    expect((operation.inputSchema as { required: string[] }).required).toEqual(['body', 'path_id']);
  });

  it('makes an inputSchema that accepts exactly the requests the operation accepts', async () => {
    const operation = await only(
      document('3.0.3', {
        '/orders': {
          post: {
            parameters: [{ name: 'mode', in: 'query', schema: { type: 'string', enum: ['fast', 'slow'], default: 'slow' } }],
            requestBody: {
              required: true,
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    required: ['quantity'],
                    properties: { quantity: { type: 'integer', minimum: 1 }, note: { type: 'string', nullable: true } },
                  },
                },
              },
            },
            responses: ok,
          },
        },
      }),
    );
    const validate = createAjv().compile(operation.inputSchema);
    expect(validate({ body: { quantity: 2, note: null }, mode: 'fast' })).toBe(true);
    expect(validate({ body: { quantity: 0 } })).toBe(false);
    expect(validate({ body: { quantity: 1 }, mode: 'medium' })).toBe(false);
    expect(validate({ mode: 'fast' })).toBe(false);
    expect(validate({ body: { quantity: 1 }, unknown: 1 })).toBe(false);
    expect(operation.inputSchema).toMatchObject({ properties: { mode: { default: 'slow' } } });
  });

  it('gives a tool without arguments the schema {type: object, additionalProperties: false}', async () => {
    const operation = await only(document('3.1.0', { '/ping': { get: { responses: ok } } }));
    expect(operation.inputSchema).toEqual({ type: 'object', additionalProperties: false });
    expect(operation.description).toBe('GET /ping');
    expect(operation.title).toBeNull();
    expect(operation.tool).toBe('get_ping');
  });

  it('describes a tool from its summary and description', async () => {
    const operation = await only(
      document('3.1.0', { '/ping': { get: { summary: 'Ping', description: 'Checks that the API answers.', responses: ok } } }),
    );
    expect(operation.title).toBe('Ping');
    expect(operation.description).toBe('Ping\n\nChecks that the API answers.');
  });

  it('carries parameter descriptions, deprecation and examples into the argument schema', async () => {
    const operation = await only(
      document('3.0.3', {
        '/search': {
          get: {
            parameters: [
              {
                name: 'q',
                in: 'query',
                required: true,
                description: 'Search terms',
                deprecated: true,
                schema: { type: 'string', format: 'email' },
                examples: { one: { value: 'a@example.com' } },
              },
            ],
            responses: ok,
          },
        },
      }),
    );
    expect((operation.inputSchema as { properties: { q: unknown } }).properties.q).toEqual({
      type: 'string',
      format: 'email',
      // A required query parameter without allowEmptyValue cannot be "".
      minLength: 1,
      description: 'Search terms',
      deprecated: true,
      examples: ['a@example.com'],
    });
  });

  it('resolves servers: operation over path item over document, variables by their defaults', async () => {
    const list = await operations(
      document(
        '3.0.3',
        {
          '/a': { get: { servers: [{ url: 'https://op.example.com/' }], responses: ok }, put: { responses: ok } },
          '/b': { servers: [{ url: 'https://path.example.com/base' }], get: { responses: ok } },
        },
        {
          servers: [
            {
              url: '{scheme}://{region}.example.com:{port}/v1',
              variables: {
                scheme: { default: 'https', enum: ['https', 'http'] },
                region: { default: 'eu' },
                port: { default: '8443' },
              },
            },
          ],
        },
      ),
    );
    expect(list.map((operation) => [operation.method, operation.path, operation.server])).toEqual([
      ['GET', '/a', 'https://op.example.com'],
      ['PUT', '/a', 'https://eu.example.com:8443/v1'],
      ['GET', '/b', 'https://path.example.com/base'],
    ]);
  });

  it('resolves a relative server URL against the document URL, and refuses it for a local file', async () => {
    const text = document('3.1.0', { '/a': { get: { responses: ok } } }, { servers: [{ url: '/api' }] });
    const fromUrl = await only(text, 'https://docs.example.com/specs/openapi.json');
    expect(fromUrl.server).toBe('https://docs.example.com/api');
    expect(fromUrl.status).toBe('supported');
    const fromFile = await only(text, 'openapi.json');
    expect(fromFile.server).toBeNull();
    expect(fromFile.status).toBe('unsupported');
    expect(fromFile.reason?.code).toBe('SERVER_URL_MISSING');
    const noServers = await only(JSON.stringify({ ...JSON.parse(text), servers: undefined }), 'openapi.json');
    expect(noServers.reason?.message).toContain('declares no servers');
  });

  it('lets operation security replace the global one: [] is none, {} makes it optional', async () => {
    const list = await operations(
      document(
        '3.0.3',
        {
          '/global': { get: { responses: ok } },
          '/none': { get: { security: [], responses: ok } },
          '/optional': { get: { security: [{}, { key: [] }], responses: ok } },
          '/oauth': { get: { security: [{ oauth: ['read', 'write'] }], responses: ok } },
        },
        {
          security: [{ basic: [] }],
          components: {
            securitySchemes: {
              basic: { type: 'http', scheme: 'Basic', description: 'never copied' },
              key: { type: 'apiKey', in: 'header', name: 'X-Key' },
              oauth: {
                type: 'oauth2',
                flows: {
                  clientCredentials: { tokenUrl: 'https://auth.example.com/token', scopes: { read: '', write: '' } },
                  implicit: { authorizationUrl: 'https://auth.example.com/authorize', scopes: {} },
                },
              },
              unused: { type: 'apiKey', in: 'query', name: 'k' },
            },
          },
        },
      ),
    );
    const byPath = Object.fromEntries(list.map((operation) => [operation.path, operation]));
    expect(byPath['/global']?.security).toEqual([{ basic: [] }]);
    expect(byPath['/global']?.securitySchemes).toEqual({ basic: { type: 'http', scheme: 'basic' } });
    expect(byPath['/none']?.security).toEqual([]);
    expect(byPath['/none']?.securitySchemes).toEqual({});
    expect(byPath['/optional']?.security).toEqual([{}, { key: [] }]);
    expect(byPath['/optional']?.securitySchemes).toEqual({ key: { type: 'apiKey', in: 'header', name: 'X-Key' } });
    expect(byPath['/oauth']?.securitySchemes).toEqual({
      oauth: { type: 'oauth2', flows: ['clientCredentials', 'implicit'], tokenUrl: 'https://auth.example.com/token' },
    });
    expect(list.every((operation) => operation.status === 'supported')).toBe(true);
  });

  it('marks an operation unsupported only when no security alternative can be satisfied', async () => {
    const schemes = {
      components: {
        securitySchemes: {
          mtls: { type: 'mutualTLS' },
          oidc: { type: 'openIdConnect', openIdConnectUrl: 'https://auth.example.com/.well-known/openid-configuration' },
          bearer: { type: 'http', scheme: 'bearer' },
        },
      },
    };
    const list = await operations(
      document(
        '3.1.0',
        {
          '/either': { get: { security: [{ mtls: [] }, { bearer: [] }], responses: ok } },
          '/mtls': { get: { security: [{ mtls: [] }], responses: ok } },
          '/oidc': { get: { security: [{ oidc: [] }], responses: ok } },
        },
        schemes,
      ),
    );
    expect(list.map((operation) => [operation.path, operation.status, operation.reason?.code ?? null])).toEqual([
      ['/either', 'supported', null],
      ['/mtls', 'unsupported', 'SECURITY_SCHEME_UNSUPPORTED'],
      // A person's own token (oauthPerson) or one of the gateway's satisfies an OpenID Connect scheme.
      ['/oidc', 'supported', null],
    ]);
  });

  it('prefers application/json among body media types and refuses bodies it cannot send', async () => {
    const list = await operations(
      document('3.0.3', {
        '/json': {
          post: {
            requestBody: {
              content: {
                'application/xml': { schema: { type: 'object' } },
                'application/x-www-form-urlencoded': { schema: { type: 'object' } },
                'application/json': { schema: { type: 'object' } },
              },
            },
            responses: ok,
          },
        },
        '/form': {
          post: { requestBody: { content: { 'application/x-www-form-urlencoded': { schema: { type: 'object' } } } }, responses: ok },
        },
        '/upload': {
          post: {
            requestBody: { content: { 'multipart/form-data': { schema: { type: 'object' } } } },
            responses: ok,
          },
        },
      }),
    );
    expect(list.map((operation) => [operation.path, operation.body?.mediaType, operation.reason?.code ?? null])).toEqual([
      ['/form', 'application/x-www-form-urlencoded', null],
      ['/json', 'application/json', null],
      ['/upload', 'multipart/form-data', 'MEDIA_TYPE_UNSUPPORTED'],
    ]);
  });

  it('marks operations whose success responses only stream as STREAMING_RESPONSE', async () => {
    const list = await operations(
      document('3.0.3', {
        '/events': { get: { responses: { '200': { description: 'events', content: { 'text/event-stream': {} } } } } },
        '/both': {
          get: {
            responses: {
              '200': { description: 'x', content: { 'text/event-stream': {}, 'application/json': {} } },
            },
          },
        },
      }),
    );
    expect(list.map((operation) => [operation.path, operation.reason?.code ?? null])).toEqual([
      ['/both', null],
      ['/events', 'STREAMING_RESPONSE'],
    ]);
  });

  it('imports the 3.2 QUERY method and additionalOperations, upper-cased', async () => {
    const list = await operations(
      document('3.2.0', {
        '/pets': {
          query: { operationId: 'searchPets', responses: ok },
          additionalOperations: { copy: { responses: ok }, LINK: { responses: ok } },
          get: { responses: ok },
        },
      }),
    );
    expect(list.map((operation) => [operation.method, operation.tool])).toEqual([
      ['COPY', 'copy_pets'],
      ['GET', 'get_pets'],
      ['LINK', 'link_pets'],
      ['QUERY', 'search_pets'],
    ]);
  });

  it('maps a 3.2 querystring parameter to one argument holding the object its content describes', async () => {
    const operation = await only(
      document('3.2.0', {
        '/search': {
          get: {
            parameters: [
              {
                name: 'filter',
                in: 'querystring',
                content: {
                  'application/x-www-form-urlencoded': {
                    schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
                  },
                },
              },
            ],
            responses: ok,
          },
        },
      }),
    );
    expect(operation.parameters).toEqual([
      {
        name: 'filter',
        in: 'querystring',
        argument: 'filter',
        required: false,
        style: 'form',
        explode: true,
        allowReserved: false,
        contentType: 'application/x-www-form-urlencoded',
      },
    ]);
    expect(operation.status).toBe('supported');
    expect((operation.inputSchema as { properties: { filter: unknown } }).properties.filter).toEqual({
      type: 'object',
      properties: { q: { type: 'string' } },
      required: ['q'],
    });
  });

  it('marks an operation with an unresolvable reference REFERENCE_UNRESOLVABLE and imports the others', async () => {
    const list = await operations(
      document('3.1.0', {
        '/broken': {
          post: {
            requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Missing' } } } },
            responses: ok,
          },
        },
        '/fine': { get: { responses: ok } },
      }),
    );
    expect(list.map((operation) => [operation.path, operation.status, operation.reason?.code ?? null])).toEqual([
      ['/broken', 'unsupported', 'REFERENCE_UNRESOLVABLE'],
      ['/fine', 'supported', null],
    ]);
    expect(list[0]?.reason?.message).toContain('#/components/schemas/Missing');
  });

  it('puts referenced schemas in $defs, only those the operation reaches', async () => {
    const list = await operations(
      document(
        '3.0.3',
        {
          '/pets': {
            post: {
              requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' } } } },
              responses: ok,
            },
          },
        },
        {
          components: {
            schemas: {
              Pet: { type: 'object', properties: { owner: { $ref: '#/components/schemas/Person' } } },
              Person: { type: 'object', properties: { pets: { type: 'array', items: { $ref: '#/components/schemas/Pet' } } } },
              Unused: { type: 'string' },
            },
          },
        },
      ),
    );
    const schema = list[0]?.inputSchema as { $defs: Record<string, unknown>; properties: { body: unknown } };
    expect(Object.keys(schema.$defs)).toEqual(['Person', 'Pet']);
    expect(schema.properties.body).toEqual({ $ref: '#/$defs/Pet' });
    expect(() => createAjv().compile(schema)).not.toThrow();
  });

  it('fingerprints exactly the request shape: a summary change keeps it, an enum change alters it', async () => {
    const base = (summary: string, values: string[]): string =>
      document('3.0.3', {
        '/a': {
          get: {
            summary,
            parameters: [{ name: 'kind', in: 'query', schema: { type: 'string', enum: values } }],
            responses: ok,
          },
        },
      });
    const first = await only(base('One', ['x']));
    const renamed = await only(base('Two', ['x']));
    const changed = await only(base('One', ['x', 'y']));
    expect(first.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(first.fingerprint).toBe(fingerprintOf(first));
    expect(renamed.fingerprint).toBe(first.fingerprint);
    expect(changed.fingerprint).not.toBe(first.fingerprint);
  });

  it('gives byte-identical canonical output for the same document', async () => {
    const text = document('3.0.3', {
      '/b': { get: { operationId: 'same', responses: ok } },
      '/a': { get: { operationId: 'same', responses: ok }, post: { responses: ok } },
    });
    const first = await operations(text);
    const second = await operations(text);
    expect(canonicalJson(second)).toBe(canonicalJson(first));
    expect(first.map((operation) => operation.tool)).toEqual(['same', 'post_a', 'same_2']);
  });
});

describe('names that shadow Object.prototype are carried, never dropped', () => {
  const names = ['__proto__', 'constructor', 'hasOwnProperty'];
  const text =
    `{"openapi":"3.1.0","info":{"title":"T","version":"1"},"servers":[{"url":"https://api.example.com"}],"paths":{"/probe":{"post":{
    "parameters":[${names.map((name) => `{"name":"${name}","in":"query","schema":{"type":"string"}}`).join(',')}],
    "requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object","additionalProperties":false,` +
    `"required":["__proto__"],
      "properties":{${names.map((name) => `"${name}":{"type":"string","__proto__":{"type":"number"}}`).join(',')}}}}}},
    "responses":{"200":{"description":"OK"}}}}}}`;

  it('query parameters and body properties named __proto__, constructor, hasOwnProperty are in the inputSchema', async () => {
    const operation = await only(text);
    expect(operation.status).toBe('supported');
    const schema = operation.inputSchema as { properties: Record<string, { properties?: Record<string, unknown> }> };
    expect(Object.keys(schema.properties)).toEqual([...names, 'body']);
    expect(Object.keys(schema.properties.body!.properties!)).toEqual(names);
    expect(operation.parameters.map((parameter) => [parameter.name, parameter.argument])).toEqual(names.map((name) => [name, name]));
    // A `__proto__` keyword inside a schema is copied as a key, never turned into the object's prototype.
    const inner = schema.properties.body!.properties!.constructor as unknown as Record<string, unknown>;
    expect(Object.getPrototypeOf(inner)).toBe(Object.prototype);
    expect(Object.hasOwn(inner, '__proto__')).toBe(true);
  });

  it('a security scheme named __proto__ is kept with the operation', async () => {
    const secured = `{"openapi":"3.1.0","info":{"title":"T","version":"1"},"servers":[{"url":"https://api.example.com"}],
      "components":{"securitySchemes":{"__proto__":{"type":"apiKey","in":"header","name":"X-Key"}}},
      "security":[{"__proto__":[]}],"paths":{"/a":{"get":{"responses":{"200":{"description":"OK"}}}}}}`;
    const operation = await only(secured);
    expect(operation.status).toBe('supported');
    expect(Object.keys(operation.securitySchemes)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(operation.securitySchemes, '__proto__')?.value).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'X-Key',
    });
    expect(Object.keys(operation.security[0]!)).toEqual(['__proto__']);
  });

  it('the validator applies a __proto__ property like any other (own properties only)', async () => {
    const operation = await only(text);
    const validate = createAjv().compile(validatableSchema(operation.inputSchema) as object);
    expect(validate(JSON.parse('{"__proto__":"a","constructor":"b","body":{"__proto__":"c"}}'))).toBe(true);
    expect(validate(JSON.parse('{"__proto__":1,"body":{"__proto__":"c"}}'))).toBe(false);
    expect(validate(JSON.parse('{"body":{"constructor":"c"}}'))).toBe(false);
  });
});

describe('an input schema deeper than the lock can hold is unsupported, never an unreadable lock', () => {
  function arrays(depth: number): Record<string, unknown> {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let level = 1; level < depth; level += 1) schema = { type: 'array', items: schema };
    return schema;
  }
  function operationWithBody(depth: number): Record<string, unknown> {
    return { requestBody: { required: true, content: { 'application/json': { schema: arrays(depth) } } }, responses: ok };
  }

  it(
    `a body schema that puts inputSchema past MAX_INPUT_SCHEMA_DEPTH (${MAX_INPUT_SCHEMA_DEPTH}) is TOOL_SCHEMA_TOO_COMPLEX; ` +
      `its neighbours stay supported`,
    () => {
      // inputSchema (1) → properties (2) → body schema (3…): a body schema of depth d gives an inputSchema of d + 2.
      const document = {
        openapi: '3.1.0',
        info: { title: 'T', version: '1' },
        servers: [{ url: 'https://api.example.com' }],
        paths: {
          '/fits': { post: operationWithBody(MAX_INPUT_SCHEMA_DEPTH - 2) },
          '/too-deep': { post: operationWithBody(MAX_INPUT_SCHEMA_DEPTH - 1) },
        },
      };
      const [fits, tooDeep] = normaliseDocument(document, { openapiVersion: '3.1.0', documentUrl: null });
      expect(fits!.status).toBe('supported');
      expect(nestingDepth(fits!.inputSchema)).toBe(MAX_INPUT_SCHEMA_DEPTH);
      expect(tooDeep!.status).toBe('unsupported');
      expect(tooDeep!.reason).toMatchObject({ code: 'TOOL_SCHEMA_TOO_COMPLEX' });
      expect(tooDeep!.reason!.message).toContain(`more than ${MAX_INPUT_SCHEMA_DEPTH} levels`);
      expect(nestingDepth(tooDeep!.inputSchema)).toBeLessThan(5);
    },
  );
});
