import { GatewayError, type LockedOperation } from '@gateway/core';
import {
  encodeBody,
  encodeStrict,
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
    const value = argumentsValue[parameter.argument];
    if (value === undefined) continue;
    switch (parameter.in) {
      case 'path':
        path = path.split(`{${parameter.name}}`).join(serialisePathValue(parameter, value));
        break;
      case 'query':
        queryPairs.push(...serialiseQueryValue(parameter, value));
        break;
      case 'querystring':
        queryPairs.push(...serialiseQueryString(parameter, value));
        break;
      case 'header':
        headers[parameter.name.toLowerCase()] = serialiseHeaderValue(parameter, value);
        break;
      case 'cookie':
        cookies.push(serialiseCookieValue(parameter, value));
        break;
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
  // Credentials last, so an argument can never replace them.
  for (const [name, value] of Object.entries(credentials.query)) queryPairs.push(`${encodeStrict(name)}=${encodeStrict(value)}`);
  for (const [name, value] of Object.entries(credentials.cookies)) cookies.push(`${name}=${encodeStrict(value)}`);

  // Server URLs may carry a base path (`https://api.example.com/v1`); the template is appended to it.
  const base = operation.server.replace(/\/+$/, '');
  const url = new URL(`${base}${path.startsWith('/') ? path : `/${path}`}`);
  if (queryPairs.length > 0) url.search = `?${queryPairs.join('&')}`;

  headers['user-agent'] ??= USER_AGENT;
  headers.accept ??= DEFAULT_ACCEPT;
  if (cookies.length > 0) headers.cookie = cookies.join('; ');
  for (const [name, value] of Object.entries(credentials.headers)) headers[name.toLowerCase()] = value;

  let body: string | undefined;
  if (operation.body) {
    const value = argumentsValue[operation.body.argument];
    if (value !== undefined) {
      const encoded = encodeBody(operation.body, value);
      headers['content-type'] = encoded.contentType;
      body = encoded.payload;
    }
  }
  return { method: operation.method.toUpperCase(), url, headers, body };
}
