/**
 * Pieces of Fastify route schemas that several areas use. Every route declares a schema (params, querystring,
 * body, headers, or its response where it takes nothing): `http/route-inventory.ts` records the routes and a test
 * fails on one without. A request a schema refuses is answered problem+json (`REQUEST_INVALID`, or the area's own
 * code) by the area's error handler.
 */

/** A route that takes no parameters: any query sent is ignored, as before the schema. */
export const NO_PARAMETERS = {
  querystring: { type: 'object', description: 'no parameters; any sent are ignored' },
} as const;

/** A path segment read as text (a session id, an endpoint name); the handler says when it names nothing. */
export const PATH_SEGMENT = { type: 'string' } as const;

/** A query parameter read as text; a repeated one arrives as a list and is refused by a schema that wants one value. */
export const QUERY_TEXT = { type: 'string' } as const;

/** Params of a route with `:name` segments, each required text. */
export function pathParameters<const Name extends string>(...names: readonly Name[]) {
  return {
    type: 'object',
    properties: Object.fromEntries(names.map((name) => [name, PATH_SEGMENT])) as Record<Name, typeof PATH_SEGMENT>,
    required: names,
  } as const;
}

/** The bearer token of an authenticated route (its own hook checks it: the schema only says where it is sent). */
export const BEARER_HEADERS = {
  type: 'object',
  properties: { authorization: { type: 'string', description: 'Bearer <token>' } },
} as const;

/** A CORS preflight (Fetch › CORS protocol): what the browser asks for. */
export const PREFLIGHT_HEADERS = {
  type: 'object',
  properties: {
    origin: { type: 'string' },
    'access-control-request-method': { type: 'string' },
    'access-control-request-headers': { type: 'string' },
  },
} as const;
