/**
 * `/admin/webhooks…`: what `gateway webhooks list | deliveries | replay | test` read and do. Registered
 * inside the admin plugin, behind its bearer token.
 */
import type {
  AdminWebhookDelivery,
  AdminWebhookDeliveryList,
  AdminWebhookEndpoint,
  AdminWebhookEndpointList,
  AdminWebhookReplay,
  AdminWebhookTest,
  ErrorCode,
} from '@gateway/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { OutboxStatus } from '../outbox/store.js';
import type { Webhooks } from './service.js';

export interface WebhookRoutesProblem {
  status: number;
  code: ErrorCode;
  title: string;
  detail: string;
}

const STATUSES: readonly OutboxStatus[] = ['pending', 'delivered', 'failed'];
const MAX_LIMIT = 1000;

export function registerWebhookRoutes(
  app: FastifyInstance,
  webhooks: Webhooks,
  sendProblem: (reply: FastifyReply, problem: WebhookRoutesProblem) => FastifyReply,
): void {
  const store = webhooks.outbox.store;
  const unknown = (reply: FastifyReply, name: string) =>
    sendProblem(reply, {
      status: 404,
      code: 'WEBHOOK_ENDPOINT_UNKNOWN',
      title: 'No such webhook endpoint',
      detail: `no webhook endpoint named '${name}' in gateway.yaml (known: ${[...webhooks.endpoints.keys()].join(', ') || 'none'})`,
    });
  const invalid = (reply: FastifyReply, detail: string) =>
    sendProblem(reply, { status: 400, code: 'WEBHOOK_REQUEST_INVALID', title: 'Invalid request', detail });

  app.get('/webhooks', async (_request, reply) => {
    const endpoints: AdminWebhookEndpoint[] = [];
    for (const [name, config] of webhooks.endpoints) {
      const state = await store.endpoint(name);
      endpoints.push({
        name,
        url: config.url,
        outcomes: config.outcomes ?? ['allowed', 'denied', 'error'],
        rotating: Boolean(config.previousSecret) && (!config.previousSecretUntil || Date.parse(config.previousSecretUntil) > Date.now()),
        disabled: state?.disabledAt ? { at: state.disabledAt, reason: state.disabledReason } : null,
        nextSequence: state?.nextSequence ?? 1,
        counts: state?.counts ?? { pending: 0, delivered: 0, failed: 0 },
        lease:
          state?.leaseHolder && state.leaseExpiresAt && state.leaseExpiresAt > Date.now()
            ? { holder: state.leaseHolder, expiresAt: new Date(state.leaseExpiresAt).toISOString() }
            : null,
      });
    }
    reply.header('cache-control', 'no-store');
    const answer: AdminWebhookEndpointList = { endpoints };
    return answer;
  });

  app.get('/webhooks/:endpoint/deliveries', async (request, reply) => {
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
    const events = await store.events(endpoint, {
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

  app.post('/webhooks/:endpoint/replay', async (request, reply) => {
    const { endpoint } = request.params as { endpoint: string };
    if (!webhooks.endpoints.has(endpoint)) return unknown(reply, endpoint);
    const body = (request.body ?? {}) as { failed?: unknown; from?: unknown };
    const hasFailed = body.failed === true;
    const hasFrom = body.from !== undefined;
    if (hasFailed === hasFrom) return invalid(reply, 'give exactly one of {"failed": true} or {"from": <sequence>}');
    if (hasFrom && !(Number.isSafeInteger(body.from) && (body.from as number) >= 1)) {
      return invalid(reply, 'from must be a sequence number (1 or more)');
    }
    const replayed = await store.replay(endpoint, hasFailed ? { failed: true } : { fromSequence: body.from as number });
    webhooks.dispatcher.notify({ reread: true });
    const answer: AdminWebhookReplay = { endpoint, replayed };
    return answer;
  });

  app.post('/webhooks/:endpoint/test', async (request, reply) => {
    const { endpoint } = request.params as { endpoint: string };
    if (!webhooks.endpoints.has(endpoint)) return unknown(reply, endpoint);
    const result = await webhooks.sendTest(endpoint);
    const isAcknowledged = result.status !== null && result.status >= 200 && result.status < 300;
    const answer: AdminWebhookTest = { endpoint, ...result, acknowledged: isAcknowledged };
    return answer;
  });
}
