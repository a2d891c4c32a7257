import { GatewayError, type JsonSchema, type LockedOperation, type OperationParameter } from '@gateway/core';
import {
  droppedRequiredValue,
  encodeBody,
  encodeStrict,
  sendsNothing,
  serialiseCookieValue,
  serialiseHeaderValue,
  serialisePathValue,
  serialiseQueryString,
  serialiseQueryValue,
} from './serialise.js';

/** Credential material for one call, as the credential resolver hands it over (values are secrets). */
export interface ExecutorCredentials {
  headers: Record<string, string>;
  query: Record<string, string>;
  cookies: Record<string, string>;
  /** The login used (`<source>/<scheme>`; several joined with `+` when an alternative needs more than one), or null. */
  loginId: string | null;
}

export const NO_CREDENTIALS: ExecutorCredentials = { headers: {}, query: {}, cookies: {}, loginId: null };

/** The exact upstream request, built from the frozen operation only. */
export interface UpstreamRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: string | undefined;
}

/** Sent unless the operation names its own header parameter of that name. */
const DEFAULT_ACCEPT = 'application/json, text/plain;q=0.9, */*;q=0.8';
export const USER_AGENT = 'governed-tool-gateway/0.1';

/**
 * Builds the upstream request from the frozen operation and validated arguments: server URL from the lock,
 * the path template with path parameters substituted, query/header/cookie parameters serialised per their
 * style, then the body in its media type. No header of the MCP client's request is ever copied.
 */
export function buildUpstreamRequest(
  operation: LockedOperation,
  argumentsValue: Record<string, unknown>,
  credentials: ExecutorCredentials,
): UpstreamRequest {
  if (!operation.server) {
    throw new GatewayError(
      'UPSTREAM_SERVER_MISSING',
      `tool ${operation.tool} has no server URL in the lock; set a server in the OpenAPI document and publish again`,
    );
  }
  let path = operation.path;
  const queryPairs: string[] = [];
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (const parameter of operation.parameters) {
    // Own properties only: an argument named `constructor` or `toString` must not read Object.prototype.
    const value = Object.hasOwn(argumentsValue, parameter.argument) ? argumentsValue[parameter.argument] : undefined;
    if (value === undefined) continue;
    switch (parameter.in) {
      case 'path': {
        const serialised = serialisePathValue(parameter, value);
        if (isDotOrEmptySegment(serialised)) throw pathValueRefused(operation, parameter.argument, serialised);
        path = path.split(`{${parameter.name}}`).join(serialised);
        break;
      }
      case 'query': {
        const pairs = serialiseQueryValue(parameter, value);
        if (isKept(parameter, value, pairs)) queryPairs.push(...pairs);
        break;
      }
      case 'querystring': {
        const pairs = serialiseQueryString(parameter, value, requiredKeysOf(operation, parameter.argument));
        if (isKept(parameter, value, pairs)) queryPairs.push(...pairs);
        break;
      }
      case 'header': {
        const serialised = serialiseHeaderValue(parameter, value);
        if (isKept(parameter, value, serialised)) headers[parameter.name.toLowerCase()] = serialised;
        break;
      }
      case 'cookie': {
        const serialised = serialiseCookieValue(parameter, value);
        if (isKept(parameter, value, serialised)) cookies.push(serialised);
        break;
      }
      default: {
        // A parameter location added to the model must be serialised here before it compiles.
        const unreachable: never = parameter.in;
        throw new GatewayError('INTERNAL_ERROR', `tool ${operation.tool}: unhandled parameter location ${JSON.stringify(unreachable)}`);
      }
    }
  }
  if (/\{[^}]*\}/.test(path)) {
    throw new GatewayError('PATH_PARAMETER_MISSING', `tool ${operation.tool}: no value for a path parameter in ${operation.path}`);
  }
  checkPathKeepsTemplate(operation, path);
  // Credentials last, so an argument can never replace them.
  for (const [name, value] of Object.entries(credentials.query)) queryPairs.push(`${encodeStrict(name)}=${encodeStrict(value)}`);
  for (const [name, value] of Object.entries(credentials.cookies)) cookies.push(`${name}=${encodeStrict(value)}`);

  // Server URLs may carry a base path (`https://api.example.com/v1`); the template is appended to it.
  const base = operation.server.replace(/\/+$/, '');
  const url = new URL(`${base}${path.startsWith('/') ? path : `/${path}`}`);
  // Second line: the WHATWG URL parser removes dot segments, so compare what it produced with the template.
  checkUrlKeepsTemplate(operation, base, url);
  if (queryPairs.length > 0) url.search = `?${queryPairs.join('&')}`;

  headers['user-agent'] ??= USER_AGENT;
  headers.accept ??= DEFAULT_ACCEPT;
  if (cookies.length > 0) headers.cookie = cookies.join('; ');
  for (const [name, value] of Object.entries(credentials.headers)) headers[name.toLowerCase()] = value;

  let body: string | undefined;
  if (operation.body) {
    const value = argumentsValue[operation.body.argument];
    if (value !== undefined) {
      const encoded = encodeBody(operation.body, value, requiredKeysOf(operation, operation.body.argument));
      headers['content-type'] = encoded.contentType;
      body = encoded.payload;
    }
  }
  return { method: operation.method.toUpperCase(), url, headers, body };
}

/**
 * A value its serialisation sends as nothing (`sendsNothing`: `[]` as an exploded query parameter, a header or a
 * cookie) is left out like an absent argument when optional, and refused before any request when required.
 */
function isKept(parameter: OperationParameter, value: unknown, serialised: readonly string[] | string): boolean {
  if (!sendsNothing(value, serialised)) return true;
  if (parameter.required) throw droppedRequiredValue(parameter.argument, value, `as the ${parameter.in} parameter '${parameter.name}'`);
  return false;
}

/** Per operation (a publication's operations never change): the required property names of each argument's schema. */
const requiredKeysCache = new WeakMap<LockedOperation, Map<string, readonly string[]>>();

/**
 * The property names an argument's schema requires (its own `required` and those of its `allOf` members, following
 * `$ref`s into the input schema's `$defs`): the keys of a form body or form query string that may not be dropped.
 */
function requiredKeysOf(operation: LockedOperation, argument: string): readonly string[] {
  let byArgument = requiredKeysCache.get(operation);
  if (!byArgument) {
    byArgument = new Map();
    requiredKeysCache.set(operation, byArgument);
  }
  let keys = byArgument.get(argument);
  if (!keys) {
    const root = typeof operation.inputSchema === 'object' ? operation.inputSchema : {};
    const properties = root.properties as Record<string, JsonSchema> | undefined;
    const schema = properties && Object.hasOwn(properties, argument) ? properties[argument] : undefined;
    keys = [...new Set(requiredOf(schema, root, 0))];
    byArgument.set(argument, keys);
  }
  return keys;
}

function requiredOf(schema: unknown, root: Record<string, unknown>, depth: number): string[] {
  if (typeof schema !== 'object' || schema === null || depth > 16) return [];
  const node = schema as { $ref?: unknown; required?: unknown; allOf?: unknown };
  const own = Array.isArray(node.required) ? node.required.filter((key): key is string => typeof key === 'string') : [];
  const fromAllOf = Array.isArray(node.allOf) ? node.allOf.flatMap((member) => requiredOf(member, root, depth + 1)) : [];
  const match = typeof node.$ref === 'string' ? /^#\/\$defs\/(.+)$/.exec(node.$ref) : null;
  const definitions = root.$defs as Record<string, unknown> | undefined;
  const target = match && definitions && Object.hasOwn(definitions, match[1]!) ? definitions[match[1]!] : undefined;
  return [...own, ...fromAllOf, ...requiredOf(target, root, depth + 1)];
}

/**
 * `.` and `..` are unreserved (RFC 3986 §2.3), so percent-encoding leaves them as they are, and URL parsers remove
 * them as dot segments (RFC 3986 §5.2.4; WHATWG also reads `%2e` as a dot). An empty value would merge two segments
 * or end the path early. Any of these would send the request to another route than the frozen template.
 */
function isDotOrEmptySegment(segment: string): boolean {
  const dots = segment.replace(/%2e/gi, '.');
  return dots === '' || dots === '.' || dots === '..';
}

function pathValueRefused(operation: LockedOperation, argument: string, serialised: string): GatewayError {
  const shown = serialised === '' ? 'an empty value' : `"${serialised}"`;
  return new GatewayError(
    'PATH_PARAMETER_INVALID',
    `argument '${argument}' is ${shown}, which a path segment cannot carry: it would take the request out of the path ` +
      `template ${operation.path}`,
    { details: { argument, template: operation.path } },
  );
}

function templateSegments(template: string): string[] {
  return (template.startsWith('/') ? template : `/${template}`).split('/').slice(1);
}

/**
 * The substituted path has the template's segments: the same count, literal segments unchanged, and no segment
 * that holds a parameter reduced to a dot segment or to nothing (e.g. `{a}{b}` with `.` and `.`).
 */
function checkPathKeepsTemplate(operation: LockedOperation, path: string): void {
  const template = templateSegments(operation.path);
  const actual = templateSegments(path);
  const isSame =
    template.length === actual.length &&
    template.every((segment, index) => {
      const value = actual[index] as string;
      if (!segment.includes('{')) return segment === value;
      return !isDotOrEmptySegment(value);
    });
  if (!isSame) throw pathLeftTemplate(operation);
}

/** The URL as parsed still ends with as many segments as the template, none of them a dot segment. */
function checkUrlKeepsTemplate(operation: LockedOperation, base: string, url: URL): void {
  const baseSegments = new URL(`${base}/`).pathname.split('/').length - 2;
  const sent = url.pathname.split('/').slice(1 + baseSegments);
  const template = templateSegments(operation.path);
  const isSame =
    sent.length === template.length &&
    template.every((segment, index) => (segment.includes('{') ? !isDotOrEmptySegment(sent[index] as string) : true));
  if (!isSame) throw pathLeftTemplate(operation);
}

function pathLeftTemplate(operation: LockedOperation): GatewayError {
  return new GatewayError(
    'PATH_PARAMETER_INVALID',
    `the arguments would take the request out of the path template ${operation.path}; nothing was sent`,
    { details: { template: operation.path } },
  );
}
