import type { FastifyInstance } from 'fastify';
import { addressBucket } from '@gateway/runtime';
import { OAuthProblem, REGISTRATION_LIMITS } from '../oauth/clients.js';
import { allowCors, registerPreflight, sendOAuthJson, sendOAuthProblem } from '../oauth/http.js';
import type { AuthorizationDependencies } from './dependencies.js';

/** RFC 7591 §2 client metadata; the client registry checks it and answers `invalid_client_metadata` (§3.2.2). */
const REGISTRATION_BODY = { description: 'RFC 7591 client metadata (a JSON object), checked by the client registry' } as const;

/** RFC 7591: dynamic registration (deprecated in MCP 2026-07-28, kept for 2025-11-25 clients). */
export function registerRegistrationEndpoint(
  instance: FastifyInstance,
  { settings, clients, logger }: Pick<AuthorizationDependencies, 'settings' | 'clients' | 'logger'>,
): void {
  const path = `${settings.basePath}/oauth/register`;
  instance.post(path, { bodyLimit: REGISTRATION_LIMITS.bodyBytes, schema: { body: REGISTRATION_BODY } }, async (request, reply) => {
    allowCors(reply);
    try {
      // Counted per client address (an IPv6 client per /64).
      const registered = await clients.register(request.body, addressBucket(request.ip));
      logger.info({ clientId: registered.client_id, from: request.ip }, 'client registered');
      return sendOAuthJson(reply, 201, registered);
    } catch (error) {
      if (error instanceof OAuthProblem) return sendOAuthProblem(reply, error);
      throw error;
    }
  });
  registerPreflight(instance, path, 'POST');
}
