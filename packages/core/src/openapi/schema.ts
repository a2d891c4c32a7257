/**
 * OpenAPI Schema Objects → JSON Schema 2020-12, the dialect of an MCP tool's `inputSchema`.
 *
 * - OpenAPI 3.1 and 3.2 schemas are already 2020-12 (OAS 3.1 §4.8.24); 3.0 schemas are an "extended subset" of
 *   draft-05 that needs rewriting: `nullable`, boolean `exclusiveMinimum`/`exclusiveMaximum`, `example`.
 * - Every `$ref` to a schema becomes `{"$ref": "#/$defs/<name>"}` and the converted target goes into the tool's
 *   `$defs`. Recursive schemas therefore stay finite: a cycle is a `$ref` back into `$defs`, never an expansion.
 * - Each referenced schema is converted once per document and shared by every operation that reaches it.
 * - `readOnly` properties are removed: they are never sent in a request (OAS 3.0 §4.7.24 "readOnly").
 */
import { createHash } from 'node:crypto';
import { GatewayError } from '../errors.js';
import type { JsonSchema } from '../model.js';
import {
  ExternalReferenceError,
  UnresolvableReferenceError,
  isObject,
  isReference,
  localPointerOf,
  pointerSegments,
  valueAtPointer,
} from './references.js';
import { compareText } from '../compare-text.js';

export type SchemaDialect = '3.0' | '3.1';

/** More `$defs` than this in one tool schema make the operation `TOOL_SCHEMA_TOO_COMPLEX`. */
export const MAX_SCHEMA_DEFINITIONS = 1000;

export class ToolSchemaTooComplexError extends Error {
  constructor(problem: string) {
    super(problem);
    this.name = 'ToolSchemaTooComplexError';
  }
}

interface Definition {
  name: string;
  schema: JsonSchema;
  /** Pointers this definition references directly. */
  references: string[];
  readOnly: boolean;
}

/** Keywords that are OpenAPI-only or that would break `#/$defs/...` references once hoisted; never copied. */
const DROPPED_KEYWORDS = new Set([
  'nullable',
  'discriminator',
  'xml',
  'externalDocs',
  'example',
  '$id',
  '$schema',
  '$anchor',
  '$dynamicAnchor',
  '$dynamicRef',
  '$defs',
  'definitions',
  '$comment',
  '$vocabulary',
  '$ref',
]);

const SCHEMA_KEYWORDS = new Set([
  'additionalProperties',
  'not',
  'contains',
  'propertyNames',
  'if',
  'then',
  'else',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contentSchema',
]);
const SCHEMA_ARRAY_KEYWORDS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const SCHEMA_MAP_KEYWORDS = new Set(['properties', 'patternProperties', 'dependentSchemas']);

/** Pointer segments that say nothing about what a schema is; skipped when naming a definition. */
const STRUCTURAL_SEGMENTS = new Set([
  'schema',
  'schemas',
  'properties',
  'items',
  'allOf',
  'anyOf',
  'oneOf',
  'content',
  'additionalProperties',
  'components',
  '$defs',
  'definitions',
]);

function hex8(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8);
}

/**
 * The `$defs` name of the schema at a pointer. It depends on the pointer alone, so that a change elsewhere in the
 * document never renames (and so never re-fingerprints) an unrelated operation's schema:
 * `#/components/schemas/<Name>` → `<Name>` when the name is `[A-Za-z0-9._-]+` (the spec's component-name rule);
 * any other pointer → `<last meaningful segment>_<first 8 hex digits of sha256(pointer)>`.
 */
export function definitionNameOf(pointer: string): string {
  const segments = pointerSegments(pointer);
  if (segments.length === 3 && segments[0] === 'components' && segments[1] === 'schemas' && /^[A-Za-z0-9._-]+$/.test(segments[2] ?? '')) {
    return segments[2] as string;
  }
  const meaningful = segments.filter((segment) => !/^[0-9]+$/.test(segment) && !STRUCTURAL_SEGMENTS.has(segment));
  const last = (meaningful.at(-1) ?? 'schema').replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 40) || 'schema';
  return `${last}_${hex8(pointer)}`;
}

const REGEX_SYNTAX_CHARACTERS = new Set('^$\\.*+?()[]{}|/'.split(''));

/**
 * JSON Schema 2020-12 §6.4 says patterns are ECMA-262 regular expressions, and validators compile them with the
 * `u` flag, where an escape of a non-syntax character (`\:`, `\-` outside a class) is an error. Documents written
 * for other engines use such escapes freely; they are dropped (`\:` means `:` everywhere). A pattern that still
 * does not compile is left out (the schema is then more permissive, never stricter than the document).
 */
export function unicodePattern(pattern: string): string | null {
  if (isUnicodePattern(pattern)) return pattern;
  let repaired = '';
  let isInClass = false;
  for (let index = 0; index < pattern.length; index += 1) {
    const character = pattern[index] as string;
    if (character === '\\' && index + 1 < pattern.length) {
      const next = pattern[index + 1] as string;
      const isKept = /[A-Za-z0-9]/.test(next) || REGEX_SYNTAX_CHARACTERS.has(next) || (next === '-' && isInClass);
      repaired += isKept ? character + next : next;
      index += 1;
      continue;
    }
    if (character === '[' && !isInClass) isInClass = true;
    else if (character === ']' && isInClass) isInClass = false;
    repaired += character;
  }
  return isUnicodePattern(repaired) ? repaired : null;
}

function isUnicodePattern(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}

export interface ConvertedSchema {
  schema: JsonSchema;
  /** Pointers of the schemas referenced directly (their definitions go into `$defs`). */
  references: Set<string>;
}

/**
 * Schemas nested inside each other while converting, counting each `$ref` followed. A document within
 * MAX_DOCUMENT_DEPTH can still chain thousands of schemas through references (A's property is B, whose property
 * is C…); the conversion recurses along that chain, so it is bounded well below the stack's limit.
 */
export const MAX_SCHEMA_NESTING = 500;

export class SchemaConverter {
  private readonly definitions = new Map<string, Definition>();
  private nesting = 0;

  constructor(
    private readonly document: unknown,
    private readonly dialect: SchemaDialect,
  ) {}

  /** Converts one schema found inline in the document (a parameter's, a media type's…). */
  convert(schema: unknown): ConvertedSchema {
    const references = new Set<string>();
    return { schema: this.convertNode(schema, references), references };
  }

  /** The `$defs` object for schemas that reference `references`: their transitive closure, keys sorted. */
  definitionsFor(references: Iterable<string>): Record<string, JsonSchema> {
    const seen = new Set<string>();
    const pending = [...references];
    const collected: Definition[] = [];
    while (pending.length > 0) {
      const pointer = pending.pop() as string;
      if (seen.has(pointer)) continue;
      seen.add(pointer);
      const definition = this.definitionAt(pointer);
      collected.push(definition);
      if (collected.length > MAX_SCHEMA_DEFINITIONS)
        throw new ToolSchemaTooComplexError(
          `its input schema needs ${collected.length} shared definitions, more than the limit of ${MAX_SCHEMA_DEFINITIONS}`,
        );
      for (const next of definition.references) if (!seen.has(next)) pending.push(next);
    }
    collected.sort((a, b) => compareText(a.name, b.name));
    return Object.fromEntries(collected.map((definition) => [definition.name, definition.schema]));
  }

  /**
   * True when the schema (or the schema its `$ref` points to, or one of its `allOf` members: all of them apply)
   * is marked `readOnly: true`.
   */
  isReadOnly(schema: unknown, depth = 0): boolean {
    if (!isObject(schema)) return false;
    if (schema.readOnly === true) return true;
    // `{allOf: [{$ref: X}, {readOnly: true}]}` is how 3.0 documents mark a referenced schema read-only.
    if (Array.isArray(schema.allOf) && depth < 8 && schema.allOf.some((member) => this.isReadOnly(member, depth + 1))) {
      return true;
    }
    if (isReference(schema)) {
      const pointer = localPointerOf(schema.$ref);
      if (pointer === null) return false;
      try {
        return this.definitionAt(pointer).readOnly;
      } catch {
        return false;
      }
    }
    return false;
  }

  private definitionAt(pointer: string): Definition {
    const existing = this.definitions.get(pointer);
    if (existing) return existing;
    const value = valueAtPointer(this.document, pointer);
    if (value === undefined) throw new UnresolvableReferenceError(`#${pointer}`, 'nothing exists at that location');
    const definition: Definition = {
      name: definitionNameOf(pointer),
      schema: {},
      references: [],
      readOnly: isObject(value) && value.readOnly === true,
    };
    // Registered before converting so that a cycle back to this pointer ends at a `$ref`.
    this.definitions.set(pointer, definition);
    // After registering: an `allOf` member that refers back here reads this (not yet read-only) definition.
    if (!definition.readOnly && isObject(value) && Array.isArray(value.allOf)) {
      definition.readOnly = value.allOf.some((member) => this.isReadOnly(member, 1));
    }
    const references = new Set<string>();
    try {
      definition.schema = this.convertNode(value, references);
    } catch (error) {
      this.definitions.delete(pointer);
      throw error;
    }
    definition.references = [...references].sort();
    return definition;
  }

  private referenceTo(reference: string, references: Set<string>): { $ref: string } {
    const pointer = localPointerOf(reference);
    if (pointer === null) throw new ExternalReferenceError(reference);
    const definition = this.definitionAt(pointer);
    references.add(pointer);
    return { $ref: `#/$defs/${definition.name}` };
  }

  private convertNode(node: unknown, references: Set<string>): JsonSchema {
    if (this.nesting >= MAX_SCHEMA_NESTING) {
      throw new GatewayError(
        'OPENAPI_TOO_DEEP',
        `schemas nest (through $ref) deeper than the limit of ${MAX_SCHEMA_NESTING} levels; the document is refused.`,
        { details: { maxSchemaNesting: MAX_SCHEMA_NESTING } },
      );
    }
    this.nesting += 1;
    try {
      return this.convertNodeWithin(node, references);
    } finally {
      this.nesting -= 1;
    }
  }

  private convertNodeWithin(node: unknown, references: Set<string>): JsonSchema {
    if (typeof node === 'boolean') return node;
    if (!isObject(node)) return {};
    if (isReference(node)) {
      const target = this.referenceTo(node.$ref, references);
      // OAS 3.0 §4.7.23: properties beside a Reference Object are ignored. In 3.1+ a schema `$ref` is a JSON
      // Schema 2020-12 keyword and its siblings apply too.
      if (this.dialect === '3.0') return target;
      return { ...(this.convertObject(node, references) as Record<string, unknown>), ...target };
    }
    return this.convertObject(node, references);
  }

  private convertObject(node: Record<string, unknown>, references: Set<string>): JsonSchema {
    const out = this.convertKeywords(node, references);

    if (this.dialect === '3.0') {
      // OAS 3.0 (draft-05 semantics): boolean exclusiveMinimum/Maximum modify minimum/maximum.
      for (const [flag, bound] of [
        ['exclusiveMinimum', 'minimum'],
        ['exclusiveMaximum', 'maximum'],
      ] as const) {
        if (typeof out[flag] === 'boolean') {
          // A bound beyond 2^53 is a BigInt (exact-integers.ts) and moves the same way.
          if (out[flag] === true && (typeof out[bound] === 'number' || typeof out[bound] === 'bigint')) {
            out[flag] = out[bound];
            delete out[bound];
          } else {
            delete out[flag];
          }
        }
      }
    }

    // `example` (singular) is an OpenAPI keyword; 2020-12 has `examples` (an array).
    if ('example' in node && !Array.isArray(out.examples)) out.examples = [node.example];

    // OAS 3.1 §4.8.24.2 (binary data): `format: binary` is `contentMediaType`, `format: byte` is base64 encoding.
    if (out.format === 'binary') {
      delete out.format;
      out.contentMediaType ??= 'application/octet-stream';
    } else if (out.format === 'byte') {
      delete out.format;
      out.contentEncoding ??= 'base64';
    }

    this.removeReadOnlyProperties(node, out);

    if (this.dialect === '3.0' && node.nullable === true) return this.allowNull(out);
    return out;
  }

  /**
   * The keywords of one schema object, converted. Keys come from the document, so they are collected in a Map and
   * defined as own properties: `out[key] = value` would turn a `__proto__` key into a prototype change.
   */
  private convertKeywords(node: Record<string, unknown>, references: Set<string>): Record<string, unknown> {
    const out = new Map<string, unknown>();
    for (const [key, value] of Object.entries(node)) {
      if (key.startsWith('x-') || DROPPED_KEYWORDS.has(key)) continue;
      if (key === 'pattern') {
        const pattern = typeof value === 'string' ? unicodePattern(value) : null;
        if (pattern !== null) out.set('pattern', pattern);
      } else if (SCHEMA_MAP_KEYWORDS.has(key) && isObject(value)) {
        const entries: [string, JsonSchema][] = [];
        for (const [name, schema] of Object.entries(value)) {
          const property = key === 'patternProperties' ? unicodePattern(name) : name;
          if (property !== null) entries.push([property, this.convertNode(schema, references)]);
        }
        out.set(key, Object.fromEntries(entries));
      } else if (SCHEMA_ARRAY_KEYWORDS.has(key) && Array.isArray(value)) {
        out.set(
          key,
          value.map((schema) => this.convertNode(schema, references)),
        );
      } else if (SCHEMA_KEYWORDS.has(key)) {
        out.set(key, this.convertNode(value, references));
      } else if (key === 'items') {
        // draft-04 tuple form (`items: [...]`) is `prefixItems` in 2020-12.
        if (Array.isArray(value))
          out.set(
            'prefixItems',
            value.map((schema) => this.convertNode(schema, references)),
          );
        else out.set('items', this.convertNode(value, references));
      } else if (key === 'additionalItems') {
        if (Array.isArray(node.items)) out.set('items', this.convertNode(value, references));
      } else {
        out.set(key, value);
      }
    }
    return Object.fromEntries(out);
  }

  private removeReadOnlyProperties(node: Record<string, unknown>, out: Record<string, unknown>): void {
    if (!isObject(node.properties) || !isObject(out.properties)) return;
    const removed: string[] = [];
    for (const [name, schema] of Object.entries(node.properties)) {
      if (this.isReadOnly(schema)) removed.push(name);
    }
    if (removed.length === 0) return;
    const properties = { ...out.properties };
    for (const name of removed) delete properties[name];
    out.properties = properties;
    if (Array.isArray(out.required)) {
      const required = out.required.filter((name) => !removed.includes(name as string));
      if (required.length > 0) out.required = required;
      else delete out.required;
    }
  }

  /** OAS 3.0.3 `nullable: true` adds `null` to the allowed values of `type` (and of `enum`, which lists them). */
  private allowNull(out: Record<string, unknown>): JsonSchema {
    let changed = false;
    if (typeof out.type === 'string') {
      out.type = [out.type, 'null'];
      changed = true;
    } else if (Array.isArray(out.type)) {
      if (!out.type.includes('null')) out.type = [...out.type, 'null'];
      changed = true;
    }
    if (Array.isArray(out.enum)) {
      if (!out.enum.includes(null)) out.enum = [...out.enum, null];
      changed = true;
    }
    if (!changed && (out.allOf || out.anyOf || out.oneOf)) {
      // No `type` to extend: a composed schema is made nullable by an alternative.
      return { anyOf: [{ type: 'null' }, out] };
    }
    return out;
  }
}
