import { describe, expect, it } from 'vitest';
import type { LockedOperation } from '@gateway/core';
import { describeType, renderOperation } from './render-schema.js';

function operation(extra: Partial<LockedOperation>): LockedOperation {
  return {
    tool: 'create_node',
    operationId: 'createNode',
    method: 'POST',
    path: '/nodes/{nodeId}',
    title: 'Create a node',
    description: '',
    status: 'supported',
    reason: null,
    selected: false,
    server: 'https://api.example.com',
    parameters: [],
    body: null,
    security: [],
    securitySchemes: {},
    inputSchema: { type: 'object', properties: {} },
    fingerprint: `sha256:${'0'.repeat(64)}`,
    ...extra,
  };
}

describe('renderOperation', () => {
  it('keeps a circular body schema finite: a reference is unfolded once per path, then only named', () => {
    const lines = renderOperation(
      operation({
        body: { argument: 'body', mediaType: 'application/json', required: true },
        inputSchema: {
          type: 'object',
          required: ['body'],
          properties: { body: { $ref: '#/$defs/Node' } },
          $defs: {
            Node: {
              type: 'object',
              required: ['name'],
              properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } },
            },
          },
        },
      }),
    );
    expect(lines.some((line) => /^ {6}body\s+Node\s+required\s+body \(application\/json\)$/.test(line))).toBe(true);
    expect(lines.some((line) => /^ {8}name\s+string\s+required$/.test(line))).toBe(true);
    expect(lines.some((line) => /^ {8}children\s+array of Node\s+optional$/.test(line))).toBe(true);
    expect(lines.filter((line) => line.includes('children'))).toHaveLength(1);
  });

  it('shows each parameter with its location and marks unsupported operations with their reason', () => {
    const lines = renderOperation(
      operation({
        status: 'unsupported',
        reason: { code: 'MEDIA_TYPE_UNSUPPORTED', message: 'Only multipart bodies.' },
        parameters: [
          { name: 'nodeId', in: 'path', argument: 'nodeId', required: true, style: 'simple', explode: false, allowReserved: false },
          { name: 'X-Trace', in: 'header', argument: 'x_trace', required: false, style: 'simple', explode: false, allowReserved: false },
        ],
        inputSchema: {
          type: 'object',
          required: ['nodeId'],
          properties: { nodeId: { type: 'integer', format: 'int64', description: 'The node' }, x_trace: { type: 'string' } },
        },
        security: [{ apiKey: [] }, {}],
        securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-Key' } },
      }),
    );
    expect(lines[0]).toBe('[-] create_node  POST /nodes/{nodeId}  unsupported MEDIA_TYPE_UNSUPPORTED: Only multipart bodies.');
    expect(lines).toContain('    security: apiKey or none');
    expect(lines).toContain('    schemes: apiKey = apiKey in header "X-Key"');
    expect(lines.some((line) => /nodeId\s+integer \(int64\)\s+required\s+path\s+The node/.test(line))).toBe(true);
    expect(lines.some((line) => /x_trace\s+string\s+optional\s+header/.test(line))).toBe(true);
  });

  it('bounds the output of a huge schema', () => {
    const properties = Object.fromEntries(Array.from({ length: 200 }, (_, index) => [`field_${index}`, { type: 'string' }]));
    const lines = renderOperation(
      operation({
        body: { argument: 'body', mediaType: 'application/json', required: true },
        inputSchema: { type: 'object', properties: { body: { type: 'object', properties } } },
      }),
    );
    expect(lines.length).toBeLessThan(80);
    expect(lines.some((line) => line.includes('175 more'))).toBe(true);
  });
});

describe('describeType', () => {
  it('summarises formats, enums, unions, arrays and references in one short phrase', () => {
    expect(describeType({ type: 'string', format: 'date-time' })).toBe('string (date-time)');
    expect(describeType({ enum: ['a', 'b'] })).toBe('enum "a" | "b"');
    expect(describeType({ type: ['string', 'null'] })).toBe('string | null');
    expect(describeType({ type: 'array', items: { $ref: '#/$defs/Pet' } })).toBe('array of Pet');
    expect(describeType({ oneOf: [{ type: 'string' }, { type: 'integer' }] })).toBe('one of: string | integer');
    expect(describeType(true)).toBe('any');
  });
});
