/**
 * Every operation of a validated (and bundled) OpenAPI document → `Operation` (model.ts): method, path, the
 * request shape as one JSON Schema (the tool's `inputSchema`), servers, security, a support status and the
 * fingerprint. The argument mapping and reason codes are documented in docs/lockfile.md.
 */
import { canonicalDigest } from '../canonical.js';
import { GatewayError } from '../errors.js';
import type {
  JsonSchema,
  Operation,
  OperationBody,
  OperationParameter,
  ParameterLocation,
  RequestShape,
  UnsupportedReason,
} from '../model.js';
import { UNSUPPORTED_REASON_CODES, type UnsupportedReasonCode } from './reasons.js';
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

function mediaTypeRank(mediaType: string): number {
  const base = baseMediaType(mediaType);
  if (base === 'application/json') return 0;
  if (isJsonMediaType(mediaType)) return 1;
  if (base === 'application/x-www-form-urlencoded') return 2;
  if (base === 'text/plain') return 3;
  return Number.POSITIVE_INFINITY;
}

/**
 * The request body media type the gateway sends: `application/json`, then any other `+json` type, then
 * `application/x-www-form-urlencoded`, then `text/plain`; ties broken by code-unit order. Null when none fits.
 */
export function chooseRequestMediaType(mediaTypes: string[]): string | null {
  const ranked = mediaTypes
    .map((mediaType) => ({ mediaType, rank: mediaTypeRank(mediaType) }))
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
  ) {
    this.converter = new SchemaConverter(document, dialect);
  }

  normalise(raw: RawOperation, tool: string): Operation {
    const { path, method, pathItem, operation } = raw;
    const problems: Problems = new Map();
    const note = (code: UnsupportedReasonCode, message: string): void => {
      if (!problems.has(code)) problems.set(code, message);
    };

    const server = resolveServerUrl(
      { operation: operation.servers, pathItem: pathItem.servers, document: this.document.servers },
      this.documentUrl,
    );
    if (server.url === null) note('SERVER_URL_MISSING', `No absolute server URL: ${server.problem}.`);

    let shape: Omit<RequestShape, 'method' | 'path' | 'server'>;
    try {
      shape = this.requestShape(pathItem, operation, note);
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

    const requestShape: RequestShape = { method, path, server: server.url, ...shape };
    const reasonCode = UNSUPPORTED_REASON_CODES.find((code) => problems.has(code));
    const reason: UnsupportedReason | null =
      reasonCode === undefined ? null : { code: reasonCode, message: problems.get(reasonCode) as string };
    return {
      tool,
      operationId: typeof operation.operationId === 'string' ? operation.operationId : null,
      method,
      path,
      title: text(operation.summary),
      description: describeOperation(method, path, operation.summary, operation.description),
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

    // Parameters: path-level ones apply unless the operation redefines the same (name, in) (OAS 3.x §4.8.9.1).
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
    const parameterObjects = [...merged.values()].sort(
      (a, b) =>
        LOCATION_ORDER.indexOf(a.in as ParameterLocation) - LOCATION_ORDER.indexOf(b.in as ParameterLocation) ||
        compareText(String(a.name), String(b.name)),
    );

    const requestBody = operation.requestBody === undefined ? null : resolveObject(this.document, operation.requestBody);
    const content = requestBody && isObject(requestBody.content) ? requestBody.content : null;
    const hasBody = content !== null && Object.keys(content).length > 0;

    const argumentNames = this.argumentNames(parameterObjects, hasBody);
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    const parameters: OperationParameter[] = [];

    parameterObjects.forEach((parameter, index) => {
      const name = String(parameter.name);
      const location = parameter.in as ParameterLocation;
      const argument = argumentNames[index] as string;
      if (!LOCATION_ORDER.includes(location)) {
        note('PARAMETER_UNSUPPORTED', `The parameter "${name}" is in the unknown location "${String(parameter.in)}".`);
        return;
      }
      // OAS 3.x §4.8.12.1: a path parameter is always required.
      const isRequired = location === 'path' ? true : parameter.required === true;
      const defaultStyle = location === 'query' || location === 'cookie' || location === 'querystring' ? 'form' : 'simple';
      const style = typeof parameter.style === 'string' && location !== 'querystring' ? parameter.style : defaultStyle;
      if (location !== 'querystring' && !STYLES_BY_LOCATION[location].includes(style)) {
        note('PARAMETER_UNSUPPORTED', `The ${location} parameter "${name}" uses the style "${style}", not defined there.`);
      }
      // OAS 3.x §4.8.12.4 (explode): true by default for `form` (and 3.2 `cookie`) style, false otherwise.
      const explode =
        typeof parameter.explode === 'boolean' ? parameter.explode : style === 'form' || style === 'cookie';
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
          const isSerialisable =
            isJsonMediaType(mediaType) || (location === 'querystring' && base === 'application/x-www-form-urlencoded');
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
      properties[argument] = annotate(convert(schema), {
        description: parameter.description,
        deprecated: parameter.deprecated === true,
        examples: this.examplesOf(parameter),
      });
      if (isRequired) required.push(argument);
      parameters.push(mapping);
    });

    let body: OperationBody | null = null;
    if (requestBody && content && hasBody) {
      const offered = Object.keys(content);
      let mediaType = chooseRequestMediaType(offered);
      if (mediaType === null) {
        mediaType = [...offered].sort(compareText)[0] as string;
        note(
          'MEDIA_TYPE_UNSUPPORTED',
          `The request body is offered only as ${[...offered].sort(compareText).join(', ')}; the gateway sends ` +
            'JSON, form-urlencoded or plain-text bodies.',
        );
      }
      const media = resolveObject(this.document, content[mediaType]);
      body = { argument: 'body', mediaType, required: requestBody.required === true };
      properties.body = annotate(convert(media.schema ?? {}), {
        description: requestBody.description,
        deprecated: false,
        examples: this.examplesOf(media),
      });
      if (body.required) required.push('body');
    }

    const streaming = this.streamingProblem(operation);
    if (streaming) note('STREAMING_RESPONSE', streaming);

    const security = resolveSecurity(this.document, operation);
    if (security.unsupported) note('SECURITY_SCHEME_UNSUPPORTED', `No usable security alternative: ${security.unsupported}.`);

    const inputSchema: Record<string, unknown> = { type: 'object' };
    if (Object.keys(properties).length > 0) inputSchema.properties = properties;
    if (required.length > 0) inputSchema.required = [...required].sort(compareText);
    inputSchema.additionalProperties = false;
    const definitions = this.converter.definitionsFor(references);
    if (Object.keys(definitions).length > 0) inputSchema.$defs = definitions;

    return {
      parameters,
      body,
      security: security.security,
      securitySchemes: security.securitySchemes,
      inputSchema,
    };
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
        const isStreaming =
          STREAMING_MEDIA_TYPES.has(baseMediaType(mediaType)) || (isObject(media) && 'itemSchema' in media);
        if (!isStreaming) return null;
        streamed.push(mediaType);
      }
    }
    return `Every success response is a stream (${[...new Set(streamed)].sort(compareText).join(', ')}); tool calls return one result.`;
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
function annotate(
  schema: JsonSchema,
  annotations: { description: unknown; deprecated: boolean; examples: unknown[] },
): JsonSchema {
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
  options: { openapiVersion: string; documentUrl: string | null },
): Operation[] {
  const dialect: SchemaDialect = options.openapiVersion.startsWith('3.0') ? '3.0' : '3.1';
  const raws = collectOperations(document, options.openapiVersion.startsWith('3.2'));
  const names = assignToolNames(
    raws.map((raw) => ({
      operationId: typeof raw.operation.operationId === 'string' ? raw.operation.operationId : null,
      method: raw.method,
      path: raw.path,
    })),
  );
  const normaliser = new OperationNormaliser(document, dialect, options.documentUrl);
  return raws.map((raw, index) => {
    const operation = normaliser.normalise(raw, names[index] as string);
    if (!raw.unresolvable) return operation;
    const reason = { code: 'REFERENCE_UNRESOLVABLE', message: `The operation's ${raw.unresolvable.message}.` };
    return { ...operation, status: 'unsupported', reason };
  });
}
