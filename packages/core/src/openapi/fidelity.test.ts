/**
 * Request fidelity at import (issue 18), on small descriptions shaped like Stripe (form bodies with `encoding`,
 * deepObject arrays and anyOf), Kubernetes (`*\/*` bodies, PATCH media types, big integer bounds) and Discord
 * (`enum: []`).
 */
import { describe, expect, it } from 'vitest';
import { createAjv } from '../json-schema-validator.js';
import type { Operation } from '../model.js';
import { describeOperationChanges } from '../diff.js';
import { fingerprintOf, importOpenApiText } from './index.js';

const ok = { '200': { description: 'OK' } };

function document(version: string, paths: Record<string, unknown>, components: Record<string, unknown> = {}): string {
  return JSON.stringify({
    openapi: version,
    info: { title: 'Test', version: '1' },
    servers: [{ url: 'https://api.example.com' }],
    paths,
    components,
  });
}

async function only(text: string): Promise<Operation> {
  const { operations } = await importOpenApiText(text, 'openapi.json', { baseDirectory: '/nonexistent' });
  expect(operations).toHaveLength(1);
  return operations[0] as Operation;
}

const stripeCustomerSchema = {
  type: 'object',
  properties: {
    address: { type: 'object', properties: { city: { type: 'string' }, line1: { type: 'string' } } },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
    expand: { type: 'array', items: { type: 'string' } },
    name: { type: 'string' },
  },
};

function stripeCreateCustomer(encoding?: Record<string, unknown>): string {
  return document('3.0.0', {
    '/v1/customers': {
      post: {
        operationId: 'PostCustomers',
        requestBody: {
          content: {
            'application/x-www-form-urlencoded': { schema: stripeCustomerSchema, ...(encoding ? { encoding } : {}) },
          },
        },
        responses: ok,
      },
    },
  });
}

describe('form bodies record their encoding in the lock', () => {
  it('records each encoding entry (style, explode, allowReserved, contentType) and it changes the fingerprint', async () => {
    const plain = await only(stripeCreateCustomer());
    const encoded = await only(
      stripeCreateCustomer({
        address: { style: 'deepObject', explode: true },
        metadata: { style: 'deepObject', explode: true },
        expand: { explode: true, style: 'deepObject' },
        name: { contentType: 'text/plain' },
      }),
    );
    expect(plain.body).toEqual({ argument: 'body', mediaType: 'application/x-www-form-urlencoded', required: false });
    expect(encoded.status).toBe('supported');
    expect(encoded.body?.encoding).toEqual({
      address: { style: 'deepObject', explode: true, allowReserved: false },
      expand: { style: 'deepObject', explode: true, allowReserved: false },
      metadata: { style: 'deepObject', explode: true, allowReserved: false },
      name: { style: 'form', explode: true, allowReserved: false, contentType: 'text/plain' },
    });
    expect(encoded.fingerprint).toBe(fingerprintOf(encoded));
    expect(encoded.fingerprint).not.toBe(plain.fingerprint);
  });

  it('gateway diff names a change of encoding as a body encoding change, not a schema change', async () => {
    const before = await only(stripeCreateCustomer({ address: { style: 'form', explode: true } }));
    const after = await only(stripeCreateCustomer({ address: { style: 'deepObject', explode: true } }));
    expect(describeOperationChanges(before, after).map((change) => change.kind)).toEqual(['body-encoding-changed']);
  });

  it('an encoding entry whose contentType the gateway cannot produce makes the operation unsupported', async () => {
    const operation = await only(stripeCreateCustomer({ address: { contentType: 'application/xml' } }));
    expect(operation.status).toBe('unsupported');
    expect(operation.reason?.code).toBe('MEDIA_TYPE_UNSUPPORTED');
  });
});

describe('every listed tool is callable', () => {
  it('a Discord-like schema with `enum: []` is INPUT_SCHEMA_INVALID at import, not a broken tool', async () => {
    const operation = await only(
      document(
        '3.1.0',
        {
          '/channels/{channel_id}/messages': {
            post: {
              operationId: 'create_message',
              parameters: [{ name: 'channel_id', in: 'path', required: true, schema: { type: 'string' } }],
              requestBody: {
                content: {
                  'application/json': {
                    schema: { type: 'object', properties: { flags: { $ref: '#/components/schemas/MessageFlags' } } },
                  },
                },
              },
              responses: ok,
            },
          },
        },
        { schemas: { MessageFlags: { type: 'integer', enum: [] } } },
      ),
    );
    expect(operation.status).toBe('unsupported');
    expect(operation.reason?.code).toBe('INPUT_SCHEMA_INVALID');
    expect(operation.reason?.message).toContain('enum');
  });

  it('a property merely named "enum" or "default" does not hide a schema problem, and valid schemas stay supported', async () => {
    const withProblem = await only(
      document('3.1.0', {
        '/x': {
          get: {
            parameters: [{ name: 'q', in: 'query', schema: { type: 'object', properties: { default: { enum: [] } } } }],
            responses: ok,
          },
        },
      }),
    );
    expect(withProblem.reason?.code).toBe('INPUT_SCHEMA_INVALID');
    const fine = await only(
      document('3.1.0', {
        '/x': {
          get: {
            parameters: [{ name: 'q', in: 'query', schema: { type: 'object', properties: { enum: { enum: ['a'] } } } }],
            responses: ok,
          },
        },
      }),
    );
    expect(fine.status).toBe('supported');
    expect(() => createAjv().compile(fine.inputSchema as object)).not.toThrow();
  });
});

const k8sPatch = {
  type: 'object',
  description: 'Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.',
};

describe('media types', () => {
  it('a Kubernetes-like `*/*` body with a JSON schema is supported and sent as application/json (recorded as sendAs)', async () => {
    const operation = await only(
      document(
        '3.0.0',
        {
          '/api/v1/namespaces': {
            post: {
              operationId: 'createCoreV1Namespace',
              requestBody: { required: true, content: { '*/*': { schema: { $ref: '#/components/schemas/Namespace' } } } },
              responses: ok,
            },
          },
        },
        { schemas: { Namespace: { type: 'object', properties: { kind: { type: 'string' } } } } },
      ),
    );
    expect(operation.status).toBe('supported');
    expect(operation.body).toEqual({ argument: 'body', mediaType: '*/*', required: true, sendAs: 'application/json' });
  });

  it('a `*/*` body that is raw bytes stays MEDIA_TYPE_UNSUPPORTED', async () => {
    const operation = await only(
      document('3.0.0', {
        '/upload': { post: { requestBody: { content: { '*/*': { schema: { type: 'string', format: 'binary' } } } }, responses: ok } },
      }),
    );
    expect(operation.reason?.code).toBe('MEDIA_TYPE_UNSUPPORTED');
  });

  it('PATCH prefers application/merge-patch+json over JSON Patch when the schema is an object', async () => {
    const operation = await only(
      document('3.0.0', {
        '/api/v1/namespaces/{name}': {
          patch: {
            operationId: 'patchCoreV1Namespace',
            parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
            requestBody: {
              required: true,
              content: {
                'application/apply-patch+yaml': { schema: k8sPatch },
                'application/json-patch+json': { schema: k8sPatch },
                'application/merge-patch+json': { schema: k8sPatch },
                'application/strategic-merge-patch+json': { schema: k8sPatch },
              },
            },
            responses: ok,
          },
        },
      }),
    );
    expect(operation.body?.mediaType).toBe('application/merge-patch+json');
  });

  it('PATCH offered as application/json and merge-patch picks merge-patch; JSON Patch only with an array schema', async () => {
    const both = await only(
      document('3.0.0', {
        '/x': {
          patch: {
            requestBody: { content: { 'application/json': { schema: k8sPatch }, 'application/merge-patch+json': { schema: k8sPatch } } },
            responses: ok,
          },
        },
      }),
    );
    expect(both.body?.mediaType).toBe('application/merge-patch+json');
    const arrayPatch = await only(
      document('3.0.0', {
        '/x': {
          patch: {
            requestBody: { content: { 'application/json-patch+json': { schema: { type: 'array', items: { type: 'object' } } } } },
            responses: ok,
          },
        },
      }),
    );
    expect(arrayPatch.status).toBe('supported');
    expect(arrayPatch.body?.mediaType).toBe('application/json-patch+json');
    const objectPatch = await only(
      document('3.0.0', {
        '/x': { patch: { requestBody: { content: { 'application/json-patch+json': { schema: k8sPatch } } }, responses: ok } },
      }),
    );
    expect(objectPatch.reason?.code).toBe('MEDIA_TYPE_UNSUPPORTED');
  });
});

describe('schema details', () => {
  it('a property made readOnly through an allOf member is removed from the request body and from required', async () => {
    const operation = await only(
      document(
        '3.0.3',
        {
          '/orders': {
            post: {
              requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Order' } } } },
              responses: ok,
            },
          },
        },
        {
          schemas: {
            Id: { type: 'string' },
            Audit: { allOf: [{ $ref: '#/components/schemas/Id' }, { readOnly: true }] },
            Order: {
              type: 'object',
              required: ['id', 'item'],
              properties: {
                id: { allOf: [{ $ref: '#/components/schemas/Id' }, { readOnly: true }] },
                created: { $ref: '#/components/schemas/Audit' },
                item: { type: 'string' },
              },
            },
          },
        },
      ),
    );
    const order = (operation.inputSchema as { $defs: Record<string, { properties: object; required: string[] }> }).$defs.Order!;
    expect(Object.keys(order.properties)).toEqual(['item']);
    expect(order.required).toEqual(['item']);
  });

  it('a required query string refuses "" unless allowEmptyValue is true', async () => {
    const operation = await only(
      document('3.0.3', {
        '/search': {
          get: {
            parameters: [
              { name: 'q', in: 'query', required: true, schema: { type: 'string' } },
              { name: 'tag', in: 'query', required: true, allowEmptyValue: true, schema: { type: 'string' } },
              { name: 'page', in: 'query', required: false, schema: { type: 'string' } },
            ],
            responses: ok,
          },
        },
      }),
    );
    const validate = createAjv().compile(operation.inputSchema as object);
    expect(validate({ q: '', tag: 'x' })).toBe(false);
    expect(validate({ q: 'x', tag: '', page: '' })).toBe(true);
  });
});

describe('server override', () => {
  const withVariables = JSON.stringify({
    openapi: '3.0.3',
    info: { title: 'Test', version: '1' },
    servers: [{ url: 'https://{region}.api.example.com/{version}', variables: { region: { default: 'us' }, version: { default: 'v1' } } }],
    paths: { '/x': { get: { responses: ok } } },
  });

  it('values for server variables replace their defaults; other variables keep theirs', async () => {
    const { operations } = await importOpenApiText(withVariables, 'openapi.json', {
      baseDirectory: '/nonexistent',
      server: { variables: { region: 'eu-staging' } },
    });
    expect(operations[0]?.server).toBe('https://eu-staging.api.example.com/v1');
  });

  it('a URL replaces every server of the document; an undeclared variable is SERVER_OVERRIDE_INVALID', async () => {
    const { operations } = await importOpenApiText(withVariables, 'openapi.json', {
      baseDirectory: '/nonexistent',
      server: 'https://staging.example.com/base/',
    });
    expect(operations[0]?.server).toBe('https://staging.example.com/base');
    await expect(
      importOpenApiText(withVariables, 'openapi.json', { baseDirectory: '/nonexistent', server: { variables: { regoin: 'eu' } } }),
    ).rejects.toMatchObject({ code: 'SERVER_OVERRIDE_INVALID' });
  });
});
