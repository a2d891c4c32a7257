/**
 * The admin API's gate, run on every `/admin/*` request before its body is read: the Host/Origin check of `/mcp`
 * (DNS rebinding), then the bearer token from the vault (read on every request, so a rotation applies at once),
 * with wrong tokens bounded per client address.
 */
import { addressBucket, secretsEqual, type Vault } from '@gateway/runtime';
import { isGatewayError } from '@gateway/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AttemptThrottle } from '../authorization/oauth/rate-limit.js';
import type { Throttles } from '../authorization/stores/ports.js';
import type { OriginGuard } from '../mcp/origin.js';

/** Wrong admin tokens from one client address before it must wait, and how long the count lasts. */
export const ADMIN_TOKEN_MAX_FAILURES = 20;
export const ADMIN_TOKEN_LOCKOUT_SECONDS = 900;

/** RFC 6750 §3: a 401 names the scheme and realm the client must use. */
const CHALLENGE = { 'www-authenticate': 'Bearer realm="gateway-admin"' };

export interface AdminGateOptions {
  vault: Vault;
  /** The vault entry holding the token (`admin.tokenSecret`, default `admin-token`). */
  tokenSecret: string;
  guard: OriginGuard;
  throttles?: Throttles;
}

/** The onRequest hook that refuses a request before any admin route sees it; undefined lets it through. */
export function adminGate(options: AdminGateOptions): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined> {
  const { vault, tokenSecret, guard } = options;
  const tokenFailures = new AttemptThrottle('admin-token', ADMIN_TOKEN_MAX_FAILURES, ADMIN_TOKEN_LOCKOUT_SECONDS, options.throttles);
  return async (request, reply) => {
    const hostProblem = guard.checkHost(request.headers.host) ?? guard.checkOrigin(request.headers.origin);
    if (hostProblem) return reply.problem('ADMIN_HOST_REFUSED', hostProblem, { title: 'Wrong host or origin' });
    let expected: string | undefined;
    try {
      expected = await vault.get(tokenSecret);
    } catch (error) {
      request.log.error({ code: isGatewayError(error) ? error.code : undefined }, 'admin token could not be read from the vault');
      return reply.problem(
        'ADMIN_TOKEN_UNAVAILABLE',
        `the admin token '${tokenSecret}' could not be read from the vault; see the server log`,
        { title: 'Admin token unavailable' },
      );
    }
    if (!expected) {
      return reply.problem(
        'ADMIN_TOKEN_NOT_CONFIGURED',
        `no admin token is configured: store one with \`gateway secrets set ${tokenSecret}\``,
        {
          title: 'Admin API disabled',
          headers: CHALLENGE,
        },
      );
    }
    // Guessing is bounded per client address, whatever the token's strength (an operator may pick a short one).
    const keys = [`address:${addressBucket(request.ip)}`];
    const wait = await tokenFailures.attempt(keys);
    if (wait > 0) {
      return reply.problem(
        'ADMIN_TOKEN_THROTTLED',
        `${ADMIN_TOKEN_MAX_FAILURES} wrong admin tokens came from this address; try again in ${wait} s`,
        { title: 'Too many wrong admin tokens', headers: { 'retry-after': String(wait) } },
      );
    }
    // RFC 6750 §2.1: `Bearer` followed by the token; the scheme name is case-insensitive (RFC 9110 §11.1).
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(request.headers.authorization ?? '');
    if (!match || !secretsEqual(match[1]!, expected)) {
      await tokenFailures.failed(keys);
      return reply.problem('ADMIN_TOKEN_INVALID', 'send the admin token as `Authorization: Bearer <token>`', {
        title: 'Admin token required',
        headers: CHALLENGE,
      });
    }
    await tokenFailures.succeeded(keys);
    return undefined;
  };
}
