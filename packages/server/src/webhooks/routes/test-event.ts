import type { AdminWebhookTest } from '@gateway/core';
import type { FastifyInstance } from 'fastify';
import { ENDPOINT_ROUTE, type WebhookRouteContext } from './problems.js';

/** `POST /admin/webhooks/:endpoint/test` (`gateway webhooks test`): one signed test event, outside the stream. */
export function registerTestEventRoute(app: FastifyInstance, { webhooks, unknown }: WebhookRouteContext): void {
  app.post('/webhooks/:endpoint/test', { schema: ENDPOINT_ROUTE }, async (request, reply) => {
    const { endpoint } = request.params as { endpoint: string };
    if (!webhooks.endpoints.has(endpoint)) return unknown(reply, endpoint);
    const result = await webhooks.sendTest(endpoint);
    const isAcknowledged = result.status !== null && result.status >= 200 && result.status < 300;
    const answer: AdminWebhookTest = { endpoint, ...result, acknowledged: isAcknowledged };
    return answer;
  });
}
