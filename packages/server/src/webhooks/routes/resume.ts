import type { AdminWebhookResume } from '@gateway/core';
import type { FastifyInstance } from 'fastify';
import { ENDPOINT_ROUTE, type WebhookRouteContext } from './problems.js';

/**
 * `POST /admin/webhooks/:endpoint/resume` (`gateway webhooks resume`): delivery goes on from the event a pause
 * stopped at (also ends a 410 Gone disable); nothing else changes.
 */
export function registerResumeRoute(app: FastifyInstance, { webhooks, unknown }: WebhookRouteContext): void {
  app.post('/webhooks/:endpoint/resume', { schema: ENDPOINT_ROUTE }, async (request, reply) => {
    const { endpoint } = request.params as { endpoint: string };
    if (!webhooks.endpoints.has(endpoint)) return unknown(reply, endpoint);
    const resumed = await webhooks.resume(endpoint);
    const answer: AdminWebhookResume = { endpoint, ...resumed };
    return answer;
  });
}
