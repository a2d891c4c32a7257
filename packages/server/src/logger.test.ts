import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createGatewayLogger, REDACTED_LOG_PATHS, urlForLog } from './logger.js';

/** Lines of the gateway's logger and of pino redacting every REDACTED_LOG_PATHS path itself, side by side. */
function bothLoggers(): {
  gateway: ReturnType<typeof createGatewayLogger>;
  reference: pino.Logger<never>;
  lines: { gateway: string[]; reference: string[] };
} {
  const lines = { gateway: [] as string[], reference: [] as string[] };
  const gateway = createGatewayLogger({ level: 'trace', destination: { write: (line) => void lines.gateway.push(line) } });
  const reference = pino(
    { level: 'trace', base: { service: 'gateway' }, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } },
    { write: (line: string) => void lines.reference.push(line) },
  );
  return { gateway, reference, lines };
}

const withoutTime = (line: string) => line.replace(/"time":\d+,/, '');

const CASES: Array<[string, Record<string, unknown>]> = [
  [
    'a tool call line (nothing to redact)',
    { tool: 'search_orders', session: 'session-4', login: 'orders/api_key', upstreamStatus: 200, durationMs: 1.3 },
  ],
  [
    'nested secret fields',
    {
      credentials: {
        apiKey: 'k-123456',
        password: 'p',
        secret: 's',
        token: 't',
        accessToken: 'a',
        access_token: 'b',
        refresh_token: 'r',
        client_secret: 'c',
        other: 'kept',
      },
    },
  ],
  [
    'request headers',
    { req: { method: 'POST', headers: { authorization: 'Bearer abc', cookie: 'sid=1', 'x-api-key': 'key', host: 'h' } } },
  ],
  [
    'headers at the top level and an authorization in another object',
    { headers: { authorization: 'Basic x', cookie: 'c', accept: '*/*' }, upstream: { authorization: 'Bearer y' } },
  ],
  ['secrets two levels down stay as pino leaves them', { outer: { inner: { token: 'deep' } }, token: 'top-level' }],
  ['arrays, nulls and numbers', { list: [{ token: 'in array' }], nothing: null, count: 3, text: 'plain' }],
];

describe('the gateway logger redacts exactly what the REDACTED_LOG_PATHS redaction does', () => {
  it.each(CASES)('%s', (_label, object) => {
    const { gateway, reference, lines } = bothLoggers();
    gateway.info(object, 'line');
    reference.info(object, 'line');
    expect(lines.gateway.map(withoutTime)).toEqual(lines.reference.map(withoutTime));
  });

  it('child bindings are redacted the same way', () => {
    const { gateway, reference, lines } = bothLoggers();
    gateway.child({ client: { client_secret: 'shh', name: 'c' } }).info('bound');
    reference.child({ client: { client_secret: 'shh', name: 'c' } }).info('bound');
    expect(lines.gateway.map(withoutTime)).toEqual(lines.reference.map(withoutTime));
    expect(lines.gateway[0]).not.toContain('shh');
  });

  it('an error keeps its message and stack while a secret on it is redacted', () => {
    const { gateway, lines } = bothLoggers();
    const error = Object.assign(new Error('upstream failed'), { token: 'tok-999' });
    gateway.error({ err: error }, 'failed');
    const logged = JSON.parse(lines.gateway[0]!) as { err: { message: string; stack: string; token: string } };
    expect(logged.err.message).toBe('upstream failed');
    expect(logged.err.stack).toContain('upstream failed');
    expect(logged.err.token).toBe('[redacted]');
    expect(error.token).toBe('tok-999'); // the logged object itself is not changed
  });
});

describe('request URLs as logged', () => {
  it("hide the handles on someone else's flow: a pending request, a connect ticket, a code and its state", () => {
    expect(urlForLog('/connect?ticket=c1.abc.def')).toBe('/connect?ticket=[redacted]');
    expect(urlForLog('/connect/callback?code=xyz&state=s1&iss=https%3A%2F%2Fid.example.com')).toBe(
      '/connect/callback?code=[redacted]&state=[redacted]&iss=https%3A%2F%2Fid.example.com',
    );
    expect(urlForLog('/consent?request=r1')).toBe('/consent?request=[redacted]');
  });
});
