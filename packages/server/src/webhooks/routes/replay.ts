import type { AdminWebhookReplay } from '@gateway/core';
import type { FastifyInstance } from 'fastify';
import { ENDPOINT_ROUTE, type WebhookRouteContext } from './problems.js';

/** `{"failed": true}` or `{"from": <sequence>}`: which one, and its value, the handler checks. */
const REPLAY_BODY = {
  type: ['object', 'null'],
  properties: { failed: { description: 'true: every failed event' }, from: { description: 'a sequence number, 1 or more' } },
} as const;

/** `POST /admin/webhooks/:endpoint/replay` (`gateway webhooks replay`): failed events, or every one from a sequence. */
export function registerReplayRoute(app: FastifyInstance, { webhooks, unknown, invalid }: WebhookRouteContext): void {
  app.post('/webhooks/:endpoint/replay', { schema: { ...ENDPOINT_ROUTE, body: REPLAY_BODY } }, async (request, reply) => {
    const { endpoint } = request.params as { endpoint: string };
    if (!webhooks.endpoints.has(endpoint)) return unknown(reply, endpoint);
    const body = (request.body ?? {}) as { failed?: unknown; from?: unknown };
    const hasFailed = body.failed === true;
    const hasFrom = body.from !== undefined;
    if (hasFailed === hasFrom) return invalid(reply, 'give exactly one of {"failed": true} or {"from": <sequence>}');
    if (hasFrom && !(Number.isSafeInteger(body.from) && (body.from as number) >= 1)) {
      return invalid(reply, 'from must be a sequence number (1 or more)');
    }
    const replayed = await webhooks.replay(endpoint, hasFailed ? { failed: true } : { fromSequence: body.from as number });
    const answer: AdminWebhookReplay = { endpoint, replayed };
    return answer;
  });
}
