import { describe, expect, it } from 'vitest';
import { createAjv } from '../json-schema-validator.js';
import { SchemaConverter, definitionNameOf, unicodePattern } from './schema.js';

function convert30(schema: unknown, document: Record<string, unknown> = {}): Record<string, unknown> {
  return new SchemaConverter(document, '3.0').convert(schema).schema as Record<string, unknown>;
}

describe('OpenAPI schema → JSON Schema 2020-12', () => {
  it('turns 3.0 nullable into a null type, a null enum value, or a null alternative', () => {
    expect(convert30({ type: 'string', nullable: true })).toEqual({ type: ['string', 'null'] });
    expect(convert30({ type: 'string', enum: ['a', 'b'], nullable: true })).toEqual({
      type: ['string', 'null'],
      enum: ['a', 'b', null],
    });
    expect(convert30({ allOf: [{ type: 'object' }], nullable: true })).toEqual({
      anyOf: [{ type: 'null' }, { allOf: [{ type: 'object' }] }],
    });
    expect(convert30({ type: 'string', nullable: false })).toEqual({ type: 'string' });
  });

  it('turns boolean exclusiveMinimum/exclusiveMaximum into numeric bounds', () => {
    expect(convert30({ type: 'number', minimum: 1, exclusiveMinimum: true, maximum: 9, exclusiveMaximum: false })).toEqual({
      type: 'number',
      exclusiveMinimum: 1,
      maximum: 9,
    });
  });

  it('turns example into examples and binary/byte formats into content keywords', () => {
    expect(convert30({ type: 'string', example: 'x' })).toEqual({ type: 'string', examples: ['x'] });
    expect(convert30({ type: 'string', format: 'binary' })).toEqual({
      type: 'string',
      contentMediaType: 'application/octet-stream',
    });
    expect(convert30({ type: 'string', format: 'byte' })).toEqual({ type: 'string', contentEncoding: 'base64' });
    expect(convert30({ type: 'string', format: 'date-time' })).toEqual({ type: 'string', format: 'date-time' });
  });

  it('drops OpenAPI-only keywords and extensions', () => {
    expect(
      convert30({
        type: 'object',
        xml: { name: 'x' },
        externalDocs: { url: 'https://example.com' },
        discriminator: { propertyName: 'kind' },
        'x-internal': true,
        description: 'kept',
        deprecated: true,
      }),
    ).toEqual({ type: 'object', description: 'kept', deprecated: true });
  });

  it('removes readOnly properties (inline or through $ref) and their required entries: they are never sent', () => {
    const document = { components: { schemas: { Id: { type: 'string', readOnly: true } } } };
    const schema = convert30(
      {
        type: 'object',
        required: ['id', 'name', 'created'],
        properties: {
          id: { $ref: '#/components/schemas/Id' },
          created: { type: 'string', readOnly: true },
          name: { type: 'string' },
          secret: { type: 'string', writeOnly: true },
        },
      },
      document,
    );
    expect(schema).toEqual({
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' }, secret: { type: 'string', writeOnly: true } },
    });
  });

  it('ignores keywords beside a 3.0 $ref but keeps them beside a 3.1 $ref', () => {
    const document = { components: { schemas: { Pet: { type: 'object' } } } };
    expect(convert30({ $ref: '#/components/schemas/Pet', description: 'ignored' }, document)).toEqual({
      $ref: '#/$defs/Pet',
    });
    const converted = new SchemaConverter(document, '3.1').convert({ $ref: '#/components/schemas/Pet', description: 'kept' });
    expect(converted.schema).toEqual({ description: 'kept', $ref: '#/$defs/Pet' });
  });

  it('keeps a circular schema finite as $defs/$ref, valid under ajv 2020-12', () => {
    const document = {
      components: {
        schemas: {
          Node: {
            type: 'object',
            required: ['name'],
            properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/components/schemas/Node' } } },
          },
        },
      },
    };
    const converter = new SchemaConverter(document, '3.0');
    const converted = converter.convert({ $ref: '#/components/schemas/Node' });
    const schema = { ...(converted.schema as object), $defs: converter.definitionsFor(converted.references) };
    expect(JSON.parse(JSON.stringify(schema))).toEqual({
      $ref: '#/$defs/Node',
      $defs: {
        Node: {
          type: 'object',
          required: ['name'],
          properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } },
        },
      },
    });
    const validate = createAjv().compile(schema);
    expect(validate({ name: 'a', children: [{ name: 'b', children: [{ name: 'c' }] }] })).toBe(true);
    expect(validate({ name: 'a', children: [{ children: [] }] })).toBe(false);
  });

  it('names definitions from the pointer alone: component names as they are, other places with a hash', () => {
    expect(definitionNameOf('/components/schemas/Pet.v2')).toBe('Pet.v2');
    expect(definitionNameOf('/paths/~1pets/get/parameters/0/schema/properties/owner')).toMatch(/^owner_[0-9a-f]{8}$/);
    expect(definitionNameOf('/components/schemas/a b')).toMatch(/^a_b_[0-9a-f]{8}$/);
  });

  it('repairs patterns that only other regex engines accept, so that ajv can compile them', () => {
    expect(unicodePattern('^[a-z0-9_\\-\\:]+$')).toBe('^[a-z0-9_\\-:]+$');
    expect(unicodePattern('^a\\-b$')).toBe('^a-b$');
    expect(unicodePattern('^\\d+\\.\\d+$')).toBe('^\\d+\\.\\d+$');
    expect(unicodePattern('(?<!a)b')).toBe('(?<!a)b');
    const schema = convert30({ type: 'string', pattern: '^[a-z\\:]+$' });
    expect(createAjv().compile(schema)('ab:c')).toBe(true);
  });
});
