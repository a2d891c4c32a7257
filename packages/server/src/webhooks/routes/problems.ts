import type { FastifyReply } from 'fastify';
import { BEARER_HEADERS, pathParameters } from '../../http/route-schemas.js';
import type { Webhooks } from '../service.js';

/** What every `/admin/webhooks…` route needs: the area, and its two refusals (unknown endpoint, invalid request). */
export interface WebhookRouteContext {
  webhooks: Webhooks;
  unknown(reply: FastifyReply, name: string): FastifyReply;
  invalid(reply: FastifyReply, detail: string): FastifyReply;
}

/** The schema parts of a route on one endpoint: the bearer header and the `:endpoint` parameter. */
export const ENDPOINT_ROUTE = { headers: BEARER_HEADERS, params: pathParameters('endpoint') } as const;

export function webhookRouteContext(webhooks: Webhooks): WebhookRouteContext {
  const known = () => [...webhooks.endpoints.keys()].join(', ') || 'none';
  return {
    webhooks,
    unknown: (reply, name) =>
      reply.problem('WEBHOOK_ENDPOINT_UNKNOWN', `no webhook endpoint named '${name}' in gateway.yaml (known: ${known()})`, {
        title: 'No such webhook endpoint',
      }),
    invalid: (reply, detail) => reply.problem('WEBHOOK_REQUEST_INVALID', detail, { title: 'Invalid request' }),
  };
}
