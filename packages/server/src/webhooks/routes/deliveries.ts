import type { AdminWebhookDelivery, AdminWebhookDeliveryList } from '@gateway/core';
import type { FastifyInstance } from 'fastify';
import type { OutboxStatus } from '../../outbox/ports.js';
import { QUERY_TEXT } from '../../http/route-schemas.js';
import { ENDPOINT_ROUTE, type WebhookRouteContext } from './problems.js';

/** The filters of a delivery list, each one value; the handler checks what each must be (WEBHOOK_REQUEST_INVALID). */
const DELIVERIES_QUERY = {
  type: 'object',
  properties: { status: QUERY_TEXT, from: QUERY_TEXT, limit: QUERY_TEXT },
} as const;

const STATUSES: readonly OutboxStatus[] = ['pending', 'delivered', 'failed'];
const MAX_LIMIT = 1000;

/** `GET /admin/webhooks/:endpoint/deliveries` (`gateway webhooks deliveries`): events from a sequence on. */
export function registerDeliveriesRoute(app: FastifyInstance, { webhooks, unknown, invalid }: WebhookRouteContext): void {
  app.get('/webhooks/:endpoint/deliveries', { schema: { ...ENDPOINT_ROUTE, querystring: DELIVERIES_QUERY } }, async (request, reply) => {
    const { endpoint } = request.params as { endpoint: string };
    if (!webhooks.endpoints.has(endpoint)) return unknown(reply, endpoint);
    const query = request.query as Record<string, string | undefined>;
    if (query.status !== undefined && !STATUSES.includes(query.status as OutboxStatus)) {
      return invalid(reply, `status must be one of ${STATUSES.join(', ')}`);
    }
    const from = query.from === undefined ? 1 : Number(query.from);
    const limit = query.limit === undefined ? 100 : Number(query.limit);
    if (!Number.isSafeInteger(from) || from < 1) return invalid(reply, 'from must be a sequence number (1 or more)');
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) return invalid(reply, `limit must be between 1 and ${MAX_LIMIT}`);
    const events = await webhooks.outbox.store.events(endpoint, {
      fromSequence: from,
      limit,
      ...(query.status ? { status: query.status as OutboxStatus } : {}),
    });
    const deliveries: AdminWebhookDelivery[] = events.map(({ body: _body, endpoint: _endpoint, nextAttemptAt, ...rest }) => ({
      ...rest,
      nextAttemptAt: rest.status === 'pending' && nextAttemptAt > 0 ? new Date(nextAttemptAt).toISOString() : null,
    }));
    reply.header('cache-control', 'no-store');
    const answer: AdminWebhookDeliveryList = { endpoint, deliveries };
    return answer;
  });
}
