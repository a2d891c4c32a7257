/**
 * Every operation of a validated (and bundled) OpenAPI document → `Operation` (model.ts): method, path, the
 * request shape as one JSON Schema (the tool's `inputSchema`), servers, security, a support status and the
 * fingerprint. The argument mapping and reason codes are documented in docs/lockfile.md.
 */
import { canonicalDigest } from '../canonical.js';
import { GatewayError } from '../errors.js';
import { withDoubles } from '../exact-integers.js';
import { MAX_INPUT_SCHEMA_DEPTH, nestingDepth } from '../lock-depth.js';
import { createAjv } from '../json-schema-validator.js';
import type {
  BodyEncoding,
  ServerOverride,
  JsonSchema,
  Operation,
  OperationBody,
  OperationParameter,
  ParameterLocation,
  RequestShape,
  UnsupportedReason,
} from '../model.js';
import { UNSUPPORTED_REASON_CODES, type UnsupportedReasonCode } from './reasons.js';
import { toolTextProblem } from '../tool-text.js';
import {
  ExternalReferenceError,
  UnresolvableReferenceError,
  isObject,
  isReference,
  resolveObject,
  resolveReference,
} from './references.js';
import { SchemaConverter, ToolSchemaTooComplexError, type SchemaDialect } from './schema.js';
import { resolveSecurity } from './security.js';
import { resolveServerUrl } from './servers.js';
import { assignToolNames } from './tool-names.js';
import { compareText } from '../compare-text.js';

/** The fingerprint: `sha256:<hex>` of the RFC 8785 canonical JSON of exactly the RequestShape fields. */
export function fingerprintOf(shape: RequestShape): string {
  return canonicalDigest({
    method: shape.method,
    path: shape.path,
    server: shape.server,
    parameters: shape.parameters,
    body: shape.body,
    security: shape.security,
    securitySchemes: shape.securitySchemes,
    inputSchema: shape.inputSchema,
  });
}

/** OAS 3.x §4.8.9 Path Item Object fixed fields that are operations; 3.2 adds `query`. */
const FIXED_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const LOCATION_ORDER: ParameterLocation[] = ['path', 'query', 'querystring', 'header', 'cookie'];

/** OAS 3.x §4.8.12.4 (style values): the styles each location admits; 3.2 adds `cookie` for cookies. */
const STYLES_BY_LOCATION: Record<ParameterLocation, string[]> = {
  path: ['simple', 'label', 'matrix'],
  query: ['form', 'spaceDelimited', 'pipeDelimited', 'deepObject'],
  querystring: [],
  header: ['simple'],
  cookie: ['form', 'cookie'],
};

/** OAS 3.x §4.8.12.1: header parameters with these names SHALL be ignored (the request sets them itself). */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);

const STREAMING_MEDIA_TYPES = new Set([
  'text/event-stream',
  'application/jsonl',
  'application/x-jsonlines',
  'application/ndjson',
  'application/x-ndjson',
  'application/json-seq',
]);

function baseMediaType(mediaType: string): string {
  return (mediaType.split(';')[0] ?? '').trim().toLowerCase();
}

export function isJsonMediaType(mediaType: string): boolean {
  const base = baseMediaType(mediaType);
  return base === 'application/json' || /^[a-z0-9.+-]+\/[a-z0-9.+-]+\+json$/.test(base);
}

/** RFC 6902: a JSON Patch document is an array of operations, never an object. */
const JSON_PATCH = 'application/json-patch+json';
/** RFC 7396: a JSON Merge Patch document is the (partial) object itself. */
const MERGE_PATCH = 'application/merge-patch+json';

/** `*\/*` and `application/*`: the document accepts any (application) type, so JSON is as good as any. */
export function isWildcardMediaType(mediaType: string): boolean {
  const base = baseMediaType(mediaType);
  return base === '*/*' || base === 'application/*';
}

export interface MediaTypeChoice {
  /** Upper-case method: PATCH prefers merge-patch. */
  method?: string;
  /** True when the schema under that media type can be sent as JSON (wildcards and JSON Patch depend on it). */
  isJsonSchema?: (mediaType: string) => boolean;
  /** True when the schema under that media type may be an array (JSON Patch needs one). */
  isArraySchema?: (mediaType: string) => boolean;
}

function mediaTypeRank(mediaType: string, choice: MediaTypeChoice): number {
  const base = baseMediaType(mediaType);
  if (base === JSON_PATCH) return choice.isArraySchema?.(mediaType) === true ? 2 : Number.POSITIVE_INFINITY;
  if (choice.method === 'PATCH' && base === MERGE_PATCH) return 0;
  if (base === 'application/json') return choice.method === 'PATCH' ? 0.5 : 0;
  if (isJsonMediaType(mediaType)) return 1;
  if (base === 'application/x-www-form-urlencoded') return 3;
  if (base === 'text/plain') return 4;
  if (isWildcardMediaType(mediaType) && choice.isJsonSchema?.(mediaType) === true) return 5;
  return Number.POSITIVE_INFINITY;
}

/**
 * The request body media type the gateway sends: for PATCH `application/merge-patch+json` first; then
 * `application/json`, any other `+json` type, `application/json-patch+json` only when its schema is an array
 * (RFC 6902), `application/x-www-form-urlencoded`, `text/plain`, and last a wildcard (`*\/*`, `application/*`)
 * whose schema is JSON (sent as `application/json`). Ties broken by code-unit order. Null when none fits.
 */
export function chooseRequestMediaType(mediaTypes: string[], choice: MediaTypeChoice = {}): string | null {
  const ranked = mediaTypes
    .map((mediaType) => ({ mediaType, rank: mediaTypeRank(mediaType, choice) }))
    .filter((entry) => Number.isFinite(entry.rank))
    .sort((a, b) => a.rank - b.rank || compareText(a.mediaType, b.mediaType));
  return ranked[0]?.mediaType ?? null;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

/** summary, a blank line, description (the description alone when it already starts with the summary). */
export function describeOperation(method: string, path: string, summary: unknown, description: unknown): string {
  const title = text(summary);
  const body = text(description);
  if (title && body) return body.startsWith(title) ? body : `${title}\n\n${body}`;
  return title ?? body ?? `${method} ${path}`;
}

interface RawOperation {
  path: string;
  method: string;
  pathItem: Record<string, unknown>;
  operation: Record<string, unknown>;
  /** Set when the Operation Object itself is a reference that cannot be followed. */
  unresolvable?: UnresolvableReferenceError;
}

type Problems = Map<UnsupportedReasonCode, string>;

class OperationNormaliser {
  private readonly converter: SchemaConverter;

  constructor(
    private readonly document: Record<string, unknown>,
    dialect: SchemaDialect,
    private readonly documentUrl: string | null,
    private readonly server: ServerOverride | undefined = undefined,
  ) {
    this.converter = new SchemaConverter(document, dialect);
  }

  normalise(raw: RawOperation, tool: string): Operation {
    const { path, method, pathItem, operation } = raw;
    const problems: Problems = new Map();
    const note = (code: UnsupportedReasonCode, message: string): void => {
      if (!problems.has(code)) problems.set(code, message);
    };

    // A configured server URL replaces every level of the document's servers (checked in normaliseDocument).
    const server =
      typeof this.server === 'string'
        ? resolveServerUrl({ operation: undefined, pathItem: undefined, document: [{ url: this.server }] }, null)
        : resolveServerUrl(
            { operation: operation.servers, pathItem: pathItem.servers, document: this.document.servers },
            this.documentUrl,
            this.server?.variables,
          );
    if (server.url === null) {
      note('SERVER_URL_MISSING', `No absolute server URL: ${server.problem} (set sources.<name>.server in gateway.yaml).`);
    }

    let shape: Omit<RequestShape, 'method' | 'path' | 'server'>;
    try {
      shape = this.requestShape(method, pathItem, operation, note);
    } catch (error) {
      if (error instanceof ExternalReferenceError) throw remoteReferenceRefused(path, method, error);
      if (error instanceof UnresolvableReferenceError) {
        note('REFERENCE_UNRESOLVABLE', `The ${error.message}.`);
      } else if (error instanceof ToolSchemaTooComplexError) {
        note('TOOL_SCHEMA_TOO_COMPLEX', `The operation is too complex to offer as a tool: ${error.message}.`);
      } else {
        throw error;
      }
      shape = {
        parameters: [],
        body: null,
        security: [],
        securitySchemes: {},
        inputSchema: { type: 'object', additionalProperties: false },
      };
    }

    const invalid = problems.size === 0 ? inputSchemaProblem(shape.inputSchema) : null;
    if (invalid) note('INPUT_SCHEMA_INVALID', `The input schema cannot be compiled by a JSON Schema validator: ${invalid}.`);

    const title = text(operation.summary);
    const description = describeOperation(method, path, operation.summary, operation.description);
    const operationId = typeof operation.operationId === 'string' ? operation.operationId : null;
    const textProblem = toolTextProblem({ name: tool, operationId, path, title, description, schemas: { inputSchema: shape.inputSchema } });
    if (textProblem) note(textProblem.code, textProblem.message);

    const requestShape: RequestShape = { method, path, server: server.url, ...shape };
    const reasonCode = UNSUPPORTED_REASON_CODES.find((code) => problems.has(code));
    const reason: UnsupportedReason | null =
      reasonCode === undefined ? null : { code: reasonCode, message: problems.get(reasonCode) as string };
    return {
      tool,
      operationId,
      method,
      path,
      title,
      description,
      status: reason === null ? 'supported' : 'unsupported',
      reason,
      server: requestShape.server,
      parameters: requestShape.parameters,
      body: requestShape.body,
      security: requestShape.security,
      securitySchemes: requestShape.securitySchemes,
      inputSchema: requestShape.inputSchema,
      fingerprint: fingerprintOf(requestShape),
    };
  }

  private requestShape(
    method: string,
    pathItem: Record<string, unknown>,
    operation: Record<string, unknown>,
    note: (code: UnsupportedReasonCode, message: string) => void,
  ): Omit<RequestShape, 'method' | 'path' | 'server'> {
    const references = new Set<string>();
    const convert = (schema: unknown): JsonSchema => {
      const converted = this.converter.convert(schema);
      for (const pointer of converted.references) references.add(pointer);
      return converted.schema;
    };

    const parameterObjects = this.mergedParameters(pathItem, operation);

    const requestBody = operation.requestBody === undefined ? null : resolveObject(this.document, operation.requestBody);
    const content = requestBody && isObject(requestBody.content) ? requestBody.content : null;
    const hasBody = content !== null && Object.keys(content).length > 0;

    const argumentNames = this.argumentNames(parameterObjects, hasBody);
    // Argument names come from the document: a Map, so `__proto__` or `constructor` is a name like any other.
    const properties = new Map<string, JsonSchema>();
    const required: string[] = [];
    const parameters: OperationParameter[] = [];

    parameterObjects.forEach((parameter, index) => {
      const mapped = this.parameterMapping(parameter, argumentNames[index] as string, convert, note);
      if (!mapped) return;
      properties.set(mapped.mapping.argument, mapped.schema);
      if (mapped.mapping.required) required.push(mapped.mapping.argument);
      parameters.push(mapped.mapping);
    });

    let body: OperationBody | null = null;
    if (requestBody && content && hasBody) {
      const offered = this.requestBodyOf(method, requestBody, content, convert, note);
      body = offered.body;
      properties.set('body', offered.schema);
      if (body.required) required.push('body');
    }

    const streaming = this.streamingProblem(operation);
    if (streaming) note('STREAMING_RESPONSE', streaming);

    const security = resolveSecurity(this.document, operation);
    if (security.unsupported) note('SECURITY_SCHEME_UNSUPPORTED', `No usable security alternative: ${security.unsupported}.`);

    const inputSchema: Record<string, unknown> = { type: 'object' };
    // Object.fromEntries defines own properties, so even `__proto__` stays a property (assignment would not).
    if (properties.size > 0) inputSchema.properties = Object.fromEntries(properties);
    if (required.length > 0) inputSchema.required = [...required].sort(compareText);
    inputSchema.additionalProperties = false;
    const definitions = this.converter.definitionsFor(references);
    if (Object.keys(definitions).length > 0) inputSchema.$defs = definitions;
    // The lock must be able to hold (and its reader to read) what is written into it.
    if (nestingDepth(inputSchema, MAX_INPUT_SCHEMA_DEPTH) > MAX_INPUT_SCHEMA_DEPTH) {
      throw new ToolSchemaTooComplexError(
        `its input schema nests more than ${MAX_INPUT_SCHEMA_DEPTH} levels deep, more than tools.lock may hold`,
      );
    }

    return {
      parameters,
      body,
      security: security.security,
      securitySchemes: security.securitySchemes,
      inputSchema,
    };
  }

  /** The operation's parameters: path-level ones apply unless the operation redefines the same (name, in). */
  private mergedParameters(pathItem: Record<string, unknown>, operation: Record<string, unknown>): Record<string, unknown>[] {
    // Path-level parameters apply unless the operation redefines the same (name, in) (OAS 3.x §4.8.9.1).
    const merged = new Map<string, Record<string, unknown>>();
    for (const list of [pathItem.parameters, operation.parameters]) {
      if (!Array.isArray(list)) continue;
      for (const entry of list) {
        const parameter = resolveObject(this.document, entry);
        const name = typeof parameter.name === 'string' ? parameter.name : '';
        const location = typeof parameter.in === 'string' ? parameter.in : '';
        if (location === 'header' && IGNORED_HEADERS.has(name.toLowerCase())) continue;
        // RFC 9110 §5.1: header field names are case-insensitive.
        const key = `${location}\u0000${location === 'header' ? name.toLowerCase() : name}`;
        merged.set(key, parameter);
      }
    }
    return [...merged.values()].sort(
      (a, b) =>
        LOCATION_ORDER.indexOf(a.in as ParameterLocation) - LOCATION_ORDER.indexOf(b.in as ParameterLocation) ||
        compareText(String(a.name), String(b.name)),
    );
  }

  /** One parameter's mapping and its argument's schema; undefined (noted) for a location the gateway does not know. */
  private parameterMapping(
    parameter: Record<string, unknown>,
    argument: string,
    convert: (schema: unknown) => JsonSchema,
    note: (code: UnsupportedReasonCode, message: string) => void,
  ): { mapping: OperationParameter; schema: JsonSchema } | undefined {
    const name = String(parameter.name);
    const location = parameter.in as ParameterLocation;
    if (!LOCATION_ORDER.includes(location)) {
      note('PARAMETER_UNSUPPORTED', `The parameter "${name}" is in the unknown location "${String(parameter.in)}".`);
      return undefined;
    }
    // OAS 3.x §4.8.12.1: a path parameter is always required.
    const isRequired = location === 'path' ? true : parameter.required === true;
    const defaultStyle = location === 'query' || location === 'cookie' || location === 'querystring' ? 'form' : 'simple';
    const style = typeof parameter.style === 'string' && location !== 'querystring' ? parameter.style : defaultStyle;
    if (location !== 'querystring' && !STYLES_BY_LOCATION[location].includes(style)) {
      note('PARAMETER_UNSUPPORTED', `The ${location} parameter "${name}" uses the style "${style}", not defined there.`);
    }
    // OAS 3.x §4.8.12.4 (explode): true by default for `form` (and 3.2 `cookie`) style, false otherwise.
    const explode = typeof parameter.explode === 'boolean' ? parameter.explode : style === 'form' || style === 'cookie';
    const mapping: OperationParameter = {
      name,
      in: location,
      argument,
      required: isRequired,
      style,
      explode,
      allowReserved: parameter.allowReserved === true,
    };
    let schema: unknown = parameter.schema ?? {};
    if (isObject(parameter.content)) {
      // OAS 3.x §4.8.12.2: `content` holds exactly one media type, serialised as a whole.
      const mediaType = Object.keys(parameter.content).sort()[0];
      if (mediaType !== undefined) {
        mapping.contentType = mediaType;
        const media = resolveObject(this.document, parameter.content[mediaType]);
        schema = media.schema ?? {};
        const base = baseMediaType(mediaType);
        const isSerialisable = isJsonMediaType(mediaType) || (location === 'querystring' && base === 'application/x-www-form-urlencoded');
        if (!isSerialisable) {
          note(
            'PARAMETER_UNSUPPORTED',
            `The ${location} parameter "${name}" is described as "${mediaType}", which the gateway cannot serialise.`,
          );
        }
      }
    } else if (location === 'querystring') {
      note('PARAMETER_UNSUPPORTED', `The querystring parameter "${name}" has no content media type.`);
    }
    let converted = convert(schema);
    // OAS 3.x §4.8.12.1: `allowEmptyValue` defaults to false, so a required query string cannot be `""` (which
    // would be sent as `name=`). Said in the schema, so that the tool refuses it like any invalid argument.
    if (location === 'query' && isRequired && parameter.allowEmptyValue !== true && !mapping.contentType) {
      converted = nonEmptyString(converted);
    }
    return {
      mapping,
      schema: annotate(converted, {
        description: parameter.description,
        deprecated: parameter.deprecated === true,
        examples: this.examplesOf(parameter),
      }),
    };
  }

  /** The request body: the media type chosen (noted when none can be sent), its encoding, and its argument's schema. */
  private requestBodyOf(
    method: string,
    requestBody: Record<string, unknown>,
    content: Record<string, unknown>,
    convert: (schema: unknown) => JsonSchema,
    note: (code: UnsupportedReasonCode, message: string) => void,
  ): { body: OperationBody; schema: JsonSchema } {
    const offered = Object.keys(content);
    const schemaOf = (mediaType: string): Record<string, unknown> | null => {
      try {
        const media = resolveObject(this.document, content[mediaType]);
        return isObject(media.schema) ? resolveObject(this.document, media.schema) : null;
      } catch {
        return null;
      }
    };
    let mediaType = chooseRequestMediaType(offered, {
      method,
      isJsonSchema: (type) => isJsonBodySchema(schemaOf(type)),
      isArraySchema: (type) => mayBeArray(schemaOf(type)),
    });
    if (mediaType === null) {
      mediaType = [...offered].sort(compareText)[0] as string;
      note(
        'MEDIA_TYPE_UNSUPPORTED',
        `The request body is offered only as ${[...offered].sort(compareText).join(', ')}; the gateway sends ` +
          'JSON, form-urlencoded or plain-text bodies (JSON Patch only with an array schema).',
      );
    }
    const media = resolveObject(this.document, content[mediaType]);
    const body: OperationBody = { argument: 'body', mediaType, required: requestBody.required === true };
    if (isWildcardMediaType(mediaType)) body.sendAs = 'application/json';
    if (baseMediaType(mediaType) === 'application/x-www-form-urlencoded' && isObject(media.encoding)) {
      const encoding = this.formEncoding(media.encoding, note);
      if (Object.keys(encoding).length > 0) body.encoding = encoding;
    }
    return {
      body,
      schema: annotate(convert(media.schema ?? {}), {
        description: requestBody.description,
        deprecated: false,
        examples: this.examplesOf(media),
      }),
    };
  }

  /**
   * A form-urlencoded media type's `encoding` (OAS 3.x Encoding Object) → per-property serialisation, keys sorted.
   * `style` defaults to `form`, `explode` to true for `form`; an entry with only `contentType` keeps it (the
   * property then goes as that media type, e.g. JSON text). Entries with `headers` only change nothing here.
   */
  private formEncoding(
    encoding: Record<string, unknown>,
    note: (code: UnsupportedReasonCode, message: string) => void,
  ): Record<string, BodyEncoding> {
    const out: Record<string, BodyEncoding> = {};
    for (const name of Object.keys(encoding).sort(compareText)) {
      let entry: Record<string, unknown>;
      try {
        entry = resolveObject(this.document, encoding[name]);
      } catch {
        continue;
      }
      const hasStyle = typeof entry.style === 'string' || typeof entry.explode === 'boolean';
      const style = typeof entry.style === 'string' ? entry.style : 'form';
      if (!STYLES_BY_LOCATION.query.includes(style)) {
        note('PARAMETER_UNSUPPORTED', `The request body property "${name}" uses the encoding style "${style}", not defined for forms.`);
      }
      const mapped: BodyEncoding = {
        style,
        explode: typeof entry.explode === 'boolean' ? entry.explode : style === 'form',
        allowReserved: entry.allowReserved === true,
      };
      const contentType = typeof entry.contentType === 'string' ? entry.contentType.trim() : '';
      if (!hasStyle && contentType !== '') {
        mapped.contentType = contentType;
        const base = baseMediaType(contentType);
        if (!isJsonMediaType(contentType) && base !== 'text/plain' && base !== 'application/x-www-form-urlencoded') {
          note(
            'MEDIA_TYPE_UNSUPPORTED',
            `The request body property "${name}" is encoded as "${contentType}", which the gateway cannot serialise.`,
          );
        }
      }
      out[name] = mapped;
    }
    return out;
  }

  /**
   * Property names in inputSchema: the parameter's own name; when two parameters share a name (in different
   * locations) or a parameter is named `body` while the operation has a body, each of those is `<in>_<name>`;
   * a name still taken gets `_2`, `_3`… Parameters are visited in (location, name) order.
   */
  private argumentNames(parameters: Record<string, unknown>[], hasBody: boolean): string[] {
    const counts = new Map<string, number>();
    for (const parameter of parameters) counts.set(String(parameter.name), (counts.get(String(parameter.name)) ?? 0) + 1);
    const wanted = parameters.map((parameter) => {
      const name = String(parameter.name);
      return (counts.get(name) ?? 0) > 1 || (hasBody && name === 'body') ? `${String(parameter.in)}_${name}` : name;
    });
    const taken = new Set<string>(hasBody ? ['body'] : []);
    return wanted.map((name) => {
      let candidate = name;
      for (let counter = 2; taken.has(candidate); counter += 1) candidate = `${name}_${counter}`;
      taken.add(candidate);
      return candidate;
    });
  }

  /** `example` and the values of `examples` (Example Objects, OAS 3.x §4.8.19), as a JSON Schema `examples`. */
  private examplesOf(holder: Record<string, unknown>): unknown[] {
    const values: unknown[] = [];
    if ('example' in holder && holder.example !== undefined) values.push(holder.example);
    if (isObject(holder.examples)) {
      for (const name of Object.keys(holder.examples).sort(compareText)) {
        try {
          const example = resolveObject(this.document, holder.examples[name]);
          if ('value' in example) values.push(example.value);
          else if ('dataValue' in example) values.push(example.dataValue);
        } catch {
          // An example never changes what the request accepts: an unreadable one is left out.
        }
      }
    }
    return values;
  }

  /** Set when every success response streams (Server-Sent Events, JSON Lines, JSON text sequences). */
  private streamingProblem(operation: Record<string, unknown>): string | null {
    if (!isObject(operation.responses)) return null;
    const responses = operation.responses;
    let codes = Object.keys(responses).filter((code) => /^2([0-9]{2}|XX)$/i.test(code));
    if (codes.length === 0 && 'default' in responses) codes = ['default'];
    if (codes.length === 0) return null;
    const streamed: string[] = [];
    for (const code of codes) {
      let response: Record<string, unknown>;
      try {
        response = resolveObject(this.document, responses[code]);
      } catch {
        return null;
      }
      if (!isObject(response.content) || Object.keys(response.content).length === 0) return null;
      for (const [mediaType, media] of Object.entries(response.content)) {
        const isStreaming = STREAMING_MEDIA_TYPES.has(baseMediaType(mediaType)) || (isObject(media) && 'itemSchema' in media);
        if (!isStreaming) return null;
        streamed.push(mediaType);
      }
    }
    return `Every success response is a stream (${[...new Set(streamed)].sort(compareText).join(', ')}); tool calls return one result.`;
  }
}

/**
 * True when a body schema under a wildcard media type describes JSON data: present, and not raw bytes
 * (`format: binary`/`byte`, `contentMediaType`, `contentEncoding`).
 */
function isJsonBodySchema(schema: Record<string, unknown> | null): boolean {
  if (schema === null || Object.keys(schema).length === 0) return false;
  if (schema.format === 'binary' || schema.format === 'byte') return false;
  return schema.contentMediaType === undefined && schema.contentEncoding === undefined;
}

/** `minLength: 1` added to a schema that admits strings (and allows `""`), unless `""` is an enumerated value. */
function nonEmptyString(schema: JsonSchema): JsonSchema {
  if (!isObject(schema)) return schema;
  const admitsStrings =
    schema.type === undefined || schema.type === 'string' || (Array.isArray(schema.type) && schema.type.includes('string'));
  const isEnumerated = (Array.isArray(schema.enum) && schema.enum.includes('')) || schema.const === '';
  if (!admitsStrings || isEnumerated || (typeof schema.minLength === 'number' && schema.minLength >= 1)) return schema;
  return { ...schema, minLength: 1 };
}

/** True when the schema admits arrays: `type: array` (or a list with it), or no `type` but `items`. */
function mayBeArray(schema: Record<string, unknown> | null): boolean {
  if (schema === null) return false;
  if (schema.type === 'array') return true;
  if (Array.isArray(schema.type)) return schema.type.includes('array');
  return schema.type === undefined && (schema.items !== undefined || schema.prefixItems !== undefined);
}

let metaSchemaChecker: ReturnType<typeof createAjv> | undefined;

/**
 * Why the gateway's validator (ajv, JSON Schema 2020-12) would refuse to compile this input schema, or null. A
 * listed tool must be callable, so such an operation is unsupported rather than published broken. Compiling every
 * schema would double the cost of importing a large document; instead: the meta-schema check, plus the rules ajv
 * applies only while compiling (a non-empty `enum`, patterns valid in Unicode mode, `$ref`s that resolve).
 */
export function inputSchemaProblem(schema: JsonSchema): string | null {
  metaSchemaChecker ??= createAjv();
  // Checked as the validator will compile it: exact integers beyond 2^53 (BigInts) as doubles.
  if (!metaSchemaChecker.validateSchema(withDoubles(schema) as object)) {
    const first = metaSchemaChecker.errors?.[0];
    return `${first?.instancePath || '(root)'} ${first?.message ?? 'is not a valid schema'}`;
  }
  const root = isObject(schema) ? schema : {};
  const definitions = isObject(root.$defs) ? root.$defs : {};
  const stack: Array<[unknown, string]> = [[schema, '']];
  while (stack.length > 0) {
    const [node, where] = stack.pop() as [unknown, string];
    if (!isObject(node)) continue;
    if (Array.isArray(node.enum) && node.enum.length === 0) return `${where || '(root)'}: "enum" is an empty list`;
    if (typeof node.pattern === 'string' && !compilesAsUnicode(node.pattern)) return `${where}: the pattern does not compile`;
    if (typeof node.$ref === 'string') {
      const match = /^#\/\$defs\/(.+)$/.exec(node.$ref);
      if (node.$ref !== '#' && (match === null || !Object.hasOwn(definitions, match[1] as string))) {
        return `${where}: "$ref" ${node.$ref} does not resolve`;
      }
    }
    for (const [key, value] of Object.entries(node)) {
      if (SUBSCHEMA_MAPS.has(key) && isObject(value)) {
        for (const [name, child] of Object.entries(value)) {
          if (key === 'patternProperties' && !compilesAsUnicode(name))
            return `${where}/patternProperties: the pattern ${name} does not compile`;
          stack.push([child, `${where}/${key}/${name}`]);
        }
      } else if (SUBSCHEMA_LISTS.has(key) && Array.isArray(value)) {
        for (const [index, child] of value.entries()) stack.push([child, `${where}/${key}/${index}`]);
      } else if (SUBSCHEMAS.has(key)) {
        stack.push([value, `${where}/${key}`]);
      }
    }
  }
  return null;
}

const SUBSCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas']);
const SUBSCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const SUBSCHEMAS = new Set([
  'items',
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

function compilesAsUnicode(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}

/**
 * `sources.<name>.server` must make sense for this document: a URL must be absolute http(s); each variable must be
 * declared by one of the document's servers (a misspelt name would otherwise be ignored silently).
 */
function checkServerOverride(document: Record<string, unknown>, server: ServerOverride): void {
  if (typeof server === 'string') {
    const resolved = resolveServerUrl({ operation: undefined, pathItem: undefined, document: [{ url: server }] }, null);
    if (resolved.url === null) {
      throw new GatewayError('SERVER_OVERRIDE_INVALID', `The configured server "${server}" cannot be used: ${resolved.problem}.`);
    }
    return;
  }
  const declared = new Set<string>();
  const collect = (servers: unknown): void => {
    if (!Array.isArray(servers)) return;
    for (const entry of servers)
      if (isObject(entry) && isObject(entry.variables)) for (const name of Object.keys(entry.variables)) declared.add(name);
  };
  collect(document.servers);
  const paths = isObject(document.paths) ? document.paths : {};
  for (const pathItem of Object.values(paths)) {
    if (!isObject(pathItem)) continue;
    collect(pathItem.servers);
    for (const operation of Object.values(pathItem)) if (isObject(operation)) collect(operation.servers);
  }
  const unknown = Object.keys(server.variables)
    .filter((name) => !declared.has(name))
    .sort(compareText);
  if (unknown.length > 0) {
    throw new GatewayError(
      'SERVER_OVERRIDE_INVALID',
      `The configured server variables ${unknown.map((name) => `"${name}"`).join(', ')} are not declared by any server of the document` +
        (declared.size > 0 ? ` (it declares ${[...declared].sort(compareText).join(', ')}).` : ' (it declares none).'),
      { details: { unknown } },
    );
  }
}

function remoteReferenceRefused(path: string, method: string, error: ExternalReferenceError): GatewayError {
  return new GatewayError(
    'OPENAPI_REMOTE_REF_REFUSED',
    `${method} ${path} needs the remote reference "${error.reference}"; remote references are refused unless ` +
      'allowRemoteRefs is set for this source.',
    { details: { reference: error.reference, path, method } },
  );
}

/** Adds the parameter's (or body's) own annotations to its schema. */
function annotate(schema: JsonSchema, annotations: { description: unknown; deprecated: boolean; examples: unknown[] }): JsonSchema {
  const out: Record<string, unknown> = schema === true ? {} : schema === false ? { not: {} } : { ...schema };
  const description = text(annotations.description);
  if (description) out.description = description;
  if (annotations.deprecated) out.deprecated = true;
  if (annotations.examples.length > 0) out.examples = annotations.examples;
  return out;
}

function collectOperations(document: Record<string, unknown>, isVersion32: boolean): RawOperation[] {
  const paths = isObject(document.paths) ? document.paths : {};
  const collected: RawOperation[] = [];
  for (const path of Object.keys(paths).sort(compareText)) {
    if (path.startsWith('x-')) continue;
    const pathItem = pathItemAt(document, path, paths[path]);
    const methods: [string, unknown][] = FIXED_METHODS.map((method) => [method.toUpperCase(), pathItem[method]]);
    // OAS 3.2 §4.8.9.1: `query` is the QUERY method; `additionalOperations` maps other methods by name.
    if (isVersion32) {
      methods.push(['QUERY', pathItem.query]);
      if (isObject(pathItem.additionalOperations)) {
        for (const [method, operation] of Object.entries(pathItem.additionalOperations)) {
          methods.push([method.toUpperCase(), operation]);
        }
      }
    }
    for (const [method, value] of methods) {
      if (value === undefined) continue;
      try {
        // `$ref` on an Operation Object is not in the spec, but real multi-file documents use it.
        collected.push({ path, method, pathItem, operation: resolveObject(document, value) });
      } catch (error) {
        if (error instanceof ExternalReferenceError) throw remoteReferenceRefused(path, method, error);
        if (!(error instanceof UnresolvableReferenceError)) throw error;
        collected.push({ path, method, pathItem, operation: {}, unresolvable: error });
      }
    }
  }
  return collected.sort((a, b) => compareText(a.path, b.path) || compareText(a.method, b.method));
}

/**
 * A Path Item, following `$ref` (OAS 3.x §4.8.9: fields beside the reference are merged over the target). A path
 * item that cannot be read fails the whole import: its operations cannot even be listed.
 */
function pathItemAt(document: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  if (!isObject(value)) return {};
  if (!isReference(value)) return value;
  try {
    const target = resolveReference(document, value.$ref).value;
    if (!isObject(target)) throw new UnresolvableReferenceError(value.$ref, 'the target is not a Path Item Object');
    const { $ref: _ignored, ...siblings } = value;
    return { ...target, ...siblings };
  } catch (error) {
    if (error instanceof ExternalReferenceError) throw remoteReferenceRefused(path, 'path item', error);
    throw new GatewayError(
      'OPENAPI_REFERENCE_UNRESOLVABLE',
      `The path item "${path}" cannot be read: ${(error as Error).message}. Its operations cannot be listed.`,
      { details: { path, reference: value.$ref } },
    );
  }
}

export function normaliseDocument(
  document: Record<string, unknown>,
  options: { openapiVersion: string; documentUrl: string | null; server?: ServerOverride },
): Operation[] {
  if (options.server !== undefined) checkServerOverride(document, options.server);
  const dialect: SchemaDialect = options.openapiVersion.startsWith('3.0') ? '3.0' : '3.1';
  const raws = collectOperations(document, options.openapiVersion.startsWith('3.2'));
  const names = assignToolNames(
    raws.map((raw) => ({
      operationId: typeof raw.operation.operationId === 'string' ? raw.operation.operationId : null,
      method: raw.method,
      path: raw.path,
    })),
  );
  const normaliser = new OperationNormaliser(document, dialect, options.documentUrl, options.server);
  return raws.map((raw, index) => {
    const operation = normaliser.normalise(raw, names[index] as string);
    if (!raw.unresolvable) return operation;
    const reason = { code: 'REFERENCE_UNRESOLVABLE', message: `The operation's ${raw.unresolvable.message}.` };
    return { ...operation, status: 'unsupported', reason };
  });
}
