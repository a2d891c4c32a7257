import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BUSY_RETRY_AFTER_SECONDS, databaseBusyError, isDatabaseBusy } from '../../store/sqlite/database.js';
import { PREFLIGHT_HEADERS } from '../../http/route-schemas.js';
import type { OAuthProblem } from './clients.js';

const FORM = 'application/x-www-form-urlencoded';

/**
 * OAuth endpoints take `application/x-www-form-urlencoded` bodies (RFC 6749 §3.2). The parser keeps the
 * raw text, so repeated fields (`tool=a&tool=b`) survive; a parent context's parser is reused if present.
 */
export function addFormParser(instance: FastifyInstance): void {
  if (instance.hasContentTypeParser(FORM)) return;
  instance.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: 65_536 }, (_request, body, done) => done(null, body));
}

/**
 * One OAuth request parameter in a route schema: text, or a list when it was sent more than once (RFC 6749 §3.1
 * forbids that; the endpoint answers it in OAuth's own way, so the schema lets it through). Endpoints read their
 * parameters from the raw query or form (queryOf, formOf), never from Fastify's parsed copy.
 */
const OAUTH_PARAMETER = { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] } as const;

/** The querystring schema of an endpoint that reads these parameters. */
export function oauthQuery(...names: readonly string[]) {
  return { type: 'object', properties: Object.fromEntries(names.map((name) => [name, OAUTH_PARAMETER])) } as const;
}

/**
 * The body of a form endpoint (RFC 6749 §3.2): `application/x-www-form-urlencoded`, kept as text by the form
 * parser and read by formOf, which also reads what another parser produced; each parameter is checked by the
 * endpoint, which answers in OAuth's shape (or on the page), never with a schema failure.
 */
export const FORM_BODY = { description: 'application/x-www-form-urlencoded parameters, checked by the endpoint' } as const;

/** HTTP Basic client authentication (RFC 6749 §2.3.1), when the client uses it. */
export const CLIENT_AUTHENTICATION_HEADERS = {
  type: 'object',
  properties: { authorization: { type: 'string', description: 'Basic client_id:client_secret, when the client authenticates so' } },
} as const;

/** The request body as URLSearchParams, whichever parser produced it. */
export function formOf(request: FastifyRequest): URLSearchParams {
  const body = request.body as unknown;
  if (body instanceof URLSearchParams) return body;
  if (typeof body === 'string') return new URLSearchParams(body);
  if (Buffer.isBuffer(body)) return new URLSearchParams(body.toString('utf8'));
  const form = new URLSearchParams();
  if (body && typeof body === 'object') {
    for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
      for (const item of Array.isArray(value) ? value : [value]) if (item !== undefined) form.append(name, String(item));
    }
  }
  return form;
}

/** The query string exactly as sent (duplicates kept, so they can be refused). */
export function queryOf(request: FastifyRequest): URLSearchParams {
  const index = request.url.indexOf('?');
  return new URLSearchParams(index < 0 ? '' : request.url.slice(index + 1));
}

/** RFC 6749 §3.1 / §3.2: request parameters MUST NOT be included more than once. */
export function repeatedParameter(parameters: URLSearchParams, names: readonly string[]): string | undefined {
  return names.find((name) => parameters.getAll(name).length > 1);
}

/** JSON response for the token, registration and revocation endpoints; never cached (OAuth 2.1 §3.2.3). */
export function sendOAuthJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply
    .status(status)
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(body));
}

export function sendOAuthProblem(reply: FastifyReply, problem: OAuthProblem, options: { basicChallenge?: boolean } = {}): FastifyReply {
  // RFC 6749 §5.2: invalid_client with 401 carries a challenge for the scheme the client tried.
  if (problem.status === 401 && options.basicChallenge) reply.header('www-authenticate', 'Basic realm="gateway"');
  return sendOAuthJson(reply, problem.status, { error: problem.error, error_description: problem.description });
}

/**
 * Every endpoint of the authorization server (plugin-wide error handler): a database still busy after the wait
 * bound is answered 503 with `Retry-After` and an OAuth error body (`temporarily_unavailable`, RFC 6749 §4.1.2.1,
 * the code OAuth has for "try again later"), never 500. Any other error goes on to the application's handler.
 */
export function answerDatabaseBusy(instance: FastifyInstance): void {
  instance.setErrorHandler((error, request, reply) => {
    if (!isDatabaseBusy(error)) throw error;
    const busy = databaseBusyError(error);
    request.log.warn({ code: busy.code, error: (error as Error).message }, 'database busy; answered 503');
    reply.header('retry-after', String(BUSY_RETRY_AFTER_SECONDS));
    return sendOAuthJson(reply, 503, { error: 'temporarily_unavailable', error_description: busy.message });
  });
}

/** CORS for the endpoints browser-based clients call directly (metadata, token, registration, revocation). */
export function allowCors(reply: FastifyReply): void {
  reply.header('access-control-allow-origin', '*');
  reply.header('access-control-expose-headers', 'www-authenticate');
}

export function registerPreflight(instance: FastifyInstance, path: string, methods: string): void {
  instance.options(path, { schema: { headers: PREFLIGHT_HEADERS } }, async (_request, reply) => {
    allowCors(reply);
    return reply
      .header('access-control-allow-methods', methods)
      .header('access-control-allow-headers', 'authorization, content-type, mcp-protocol-version')
      .header('access-control-max-age', '600')
      .status(204)
      .send();
  });
}
