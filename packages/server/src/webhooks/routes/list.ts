import type { AdminWebhookEndpointList } from '@gateway/core';
import type { FastifyInstance } from 'fastify';
import { BEARER_HEADERS } from '../../http/route-schemas.js';
import { webhookSummaries } from '../summaries.js';
import type { WebhookRouteContext } from './problems.js';

/** `GET /admin/webhooks` (`gateway webhooks list`): every configured endpoint's delivery state. */
export function registerListRoute(app: FastifyInstance, { webhooks }: WebhookRouteContext): void {
  app.get('/webhooks', { schema: { headers: BEARER_HEADERS } }, async (_request, reply) => {
    const endpoints = await webhookSummaries(webhooks);
    reply.header('cache-control', 'no-store');
    const answer: AdminWebhookEndpointList = { endpoints };
    return answer;
  });
}
