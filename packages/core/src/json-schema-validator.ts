import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { Ajv2020 as Ajv2020Type } from 'ajv/dist/2020.js';
import type { FormatsPlugin } from 'ajv-formats';

// ajv and ajv-formats are CommonJS; load them through require so their default exports are plain.
const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020.js') as { default: new (options: object) => Ajv2020Type };
const addFormats = require('ajv-formats') as { default: FormatsPlugin };

export type { ErrorObject, ValidateFunction };

/** A fresh JSON Schema 2020-12 validator with formats, collecting every error. */
export function createAjv(options: { strict?: boolean } = {}): Ajv2020Type {
  const ajv = new Ajv2020.default({
    allErrors: true,
    strict: options.strict ?? false,
    validateFormats: true,
    // Property names come from documents and arguments: `required: ["constructor"]` must not be met by
    // Object.prototype.constructor, nor a `__proto__` property be read through the prototype.
    ownProperties: true,
    // Vendor formats (e.g. `int32`, `uri-template`) are unknown to ajv: they are ignored, quietly.
    logger: false,
  });
  addFormats.default(ajv as never);
  return ajv;
}

/** One line per problem: `/pointer: message`. */
export function describeSchemaErrors(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((error) => {
    const where = error.instancePath === '' ? '(root)' : error.instancePath;
    const extra =
      error.keyword === 'additionalProperties'
        ? ` '${String((error.params as { additionalProperty?: string }).additionalProperty)}'`
        : error.keyword === 'enum'
          ? `: ${JSON.stringify((error.params as { allowedValues?: unknown }).allowedValues)}`
          : '';
    return `${where}: ${error.message ?? 'is invalid'}${extra}`;
  });
}

function isSchemaMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The schema as ajv can validate it. ajv leaves a property named `__proto__` out of `properties` (and so
 * `additionalProperties: false` refuses it), but names come from documents: such a property is moved to
 * `patternProperties` as `^__proto__$`, which means the same in JSON Schema and which ajv applies to own keys.
 * A BigInt becomes its double. Every other keyword is copied as it is; the input is never changed.
 */
export function validatableSchema(schema: unknown): unknown {
  // ajv knows numbers only: an exact integer beyond 2^53 (a BigInt, exact-integers.ts) is compiled as the
  // double it rounds to, which is also what every JSON client sends for it.
  if (typeof schema === 'bigint') return Number(schema);
  if (Array.isArray(schema)) return schema.map(validatableSchema);
  if (!isSchemaMap(schema)) return schema;
  const out = new Map<string, unknown>();
  for (const [key, value] of Object.entries(schema)) out.set(key, validatableSchema(value));
  const properties = out.get('properties');
  if (isSchemaMap(properties) && Object.hasOwn(properties, '__proto__')) {
    const protoSchema = Object.getOwnPropertyDescriptor(properties, '__proto__')?.value as unknown;
    out.set('properties', Object.fromEntries(Object.entries(properties).filter(([name]) => name !== '__proto__')));
    const patterns = isSchemaMap(out.get('patternProperties')) ? (out.get('patternProperties') as Record<string, unknown>) : {};
    const existing = patterns['^__proto__$'];
    // Both apply when the document also had that exact pattern: allOf keeps each constraint.
    const merged = existing === undefined ? protoSchema : { allOf: [existing, protoSchema] };
    out.set('patternProperties', { ...patterns, '^__proto__$': merged });
  }
  return Object.fromEntries(out);
}
