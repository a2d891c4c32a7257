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
