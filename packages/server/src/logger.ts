/**
 * The gateway's structured logger (pino): JSON lines with every credential redacted, whether it arrives in a
 * request header, a tool call's fields or a child logger's bindings.
 */
import { pino, type Logger } from 'pino';

/**
 * Header and field paths pino replaces with `[redacted]`: credentials of the client (Authorization,
 * cookies, API-key headers) and of the gateway (anything named like a secret or token).
 */
export const REDACTED_LOG_PATHS = [
  'req.headers.authorization',
  'req.headers["proxy-authorization"]',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'req.headers["api-key"]',
  'req.headers["x-auth-token"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  '*.authorization',
  '*.password',
  '*.secret',
  '*.token',
  '*.accessToken',
  '*.access_token',
  '*.refresh_token',
  '*.client_secret',
  '*.apiKey',
];

const REDACTED = '[redacted]';
/** The names of the `*.<name>` paths: redacted by `redactNestedSecrets` rather than by pino (see there). */
const NESTED_SECRET_NAMES = REDACTED_LOG_PATHS.filter((path) => path.startsWith('*.')).map((path) => path.slice(2));
const DIRECT_REDACTED_PATHS = REDACTED_LOG_PATHS.filter((path) => !path.startsWith('*.'));

/**
 * What pino's `*.<name>` redaction paths do — replace `<name>` in any object that is the value of a
 * top-level field — done with a look at each field instead of pino's wildcard redaction, which clones and
 * re-serialises every field of every line, as costly as the rest of a tool call (figures: docs/performance.md,
 * "Log lines: per-field redaction"). Objects are copied (prototype and all own properties kept)
 * only when they hold a name to redact; the logged value itself is never changed.
 */
export function redactNestedSecrets(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key in object) {
    if (!Object.hasOwn(object, key)) continue;
    const value = object[key];
    if (value === null || typeof value !== 'object') continue;
    let redacted: object | undefined;
    for (const name of NESTED_SECRET_NAMES) {
      if (!Object.hasOwn(value, name)) continue;
      redacted ??= Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value)) as object;
      Object.defineProperty(redacted, name, {
        value: REDACTED,
        enumerable: Object.getOwnPropertyDescriptor(value, name)!.enumerable,
        writable: true,
        configurable: true,
      });
    }
    if (redacted) {
      copy ??= { ...object };
      copy[key] = redacted;
    }
  }
  return copy ?? object;
}

/**
 * Query parameters whose values never reach a log line: the id of a pending authorization (a handle on
 * someone's approval in progress), a connect page's ticket (a handle on someone's linking), authorization codes,
 * `state`, PKCE values and tokens.
 */
const UNLOGGED_QUERY_PARAMETERS = new Set([
  'request',
  'ticket',
  'code',
  'state',
  'code_challenge',
  'code_verifier',
  'token',
  'access_token',
  'refresh_token',
  'client_secret',
]);

/** A request URL as logged: the values of UNLOGGED_QUERY_PARAMETERS replaced by `[redacted]`. */
export function urlForLog(url: string): string {
  const question = url.indexOf('?');
  if (question < 0) return url;
  const query = url
    .slice(question + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const name = equals < 0 ? pair : pair.slice(0, equals);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // A malformed name is logged as sent; it names nothing we redact.
      }
      return equals >= 0 && UNLOGGED_QUERY_PARAMETERS.has(decoded) ? `${name}=${REDACTED}` : pair;
    });
  return `${url.slice(0, question)}?${query.join('&')}`;
}

/**
 * Fastify's request serializer with the URL passed through urlForLog. A plain object logged under `req`
 * (not a Fastify request) is kept as it is, apart from its `url`.
 */
function requestForLog(request: unknown): unknown {
  if (request === null || typeof request !== 'object') return request;
  const fields = request as {
    raw?: unknown;
    method?: string;
    url?: unknown;
    headers?: Record<string, unknown>;
    host?: string;
    ip?: string;
    socket?: { remotePort?: number };
  };
  const url = typeof fields.url === 'string' ? urlForLog(fields.url) : fields.url;
  if (fields.raw === undefined) return typeof fields.url === 'string' ? { ...fields, url } : request;
  return {
    method: fields.method,
    url,
    version: fields.headers?.['accept-version'],
    host: fields.host,
    remoteAddress: fields.ip,
    remotePort: fields.socket?.remotePort,
  };
}

/**
 * The gateway's structured logger: JSON lines, secrets redacted; `destination` 2 writes to stderr (a stream
 * object: tests).
 */
export function createGatewayLogger(options: { level?: string; destination?: 1 | 2 | { write(line: string): void } } = {}): Logger {
  const destination = options.destination ?? 1;
  const logger = pino(
    {
      level: options.level ?? process.env.GATEWAY_LOG_LEVEL ?? 'info',
      base: { service: 'gateway' },
      // Named paths through pino (cheap); the `*.<name>` ones through redactNestedSecrets (same effect).
      redact: { paths: DIRECT_REDACTED_PATHS, censor: REDACTED },
      formatters: { log: redactNestedSecrets },
      // Overrides Fastify's `req` serializer (Fastify merges the instance's own over its defaults).
      serializers: { req: requestForLog },
    },
    // Written synchronously (pino's own default): a line is on its way before the next one is made, so none is
    // lost when the process is killed, and no thread-pool round trip and extra wake-up per line (figures:
    // docs/performance.md, "Log lines: written synchronously").
    typeof destination === 'number' ? pino.destination({ dest: destination, sync: true }) : destination,
  );
  // pino applies no formatter to a child's bindings: redact them on the way in (children inherit this
  // method from the root through their prototype, so grandchildren are covered too).
  const child = logger.child;
  logger.child = function redactedChild(this: Logger, bindings, childOptions) {
    return child.call(this, redactNestedSecrets(bindings), childOptions);
  } as typeof logger.child;
  return logger;
}
