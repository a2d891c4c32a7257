/**
 * `/admin/webhooks…`: what `gateway webhooks list | deliveries | replay | resume | test` read and do.
 * Registered inside the admin plugin, behind its bearer token.
 */
import {
  DEFAULT_WEBHOOK_EVENT_TYPES,
  type AdminWebhookDelivery,
  type AdminWebhookDeliveryList,
  type AdminWebhookEndpoint,
  type AdminWebhookEndpointList,
  type AdminWebhookReplay,
  type AdminWebhookResume,
  type AdminWebhookTest,
} from '@gateway/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { BEARER_HEADERS, pathParameters, QUERY_TEXT } from '../http/route-schemas.js';
import type { OutboxStatus } from '../outbox/store.js';
import type { Webhooks } from './service.js';

const STATUSES: readonly OutboxStatus[] = ['pending', 'delivered', 'failed'];
const MAX_LIMIT = 1000;

/** Each configured endpoint's delivery state, as `GET /admin/webhooks` and `GET /admin/status` show it. */
export async function webhookSummaries(webhooks: Webhooks): Promise<AdminWebhookEndpoint[]> {
  const endpoints: AdminWebhookEndpoint[] = [];
  for (const [name, config] of webhooks.endpoints) {
    const state = await webhooks.outbox.store.endpoint(name);
    const paused = state?.pausedAt ? { at: state.pausedAt, sequence: state.pausedSequence, reason: state.pausedReason } : null;
    const disabled = state?.disabledAt ? { at: state.disabledAt, reason: state.disabledReason } : null;
    const counts = state?.counts ?? { pending: 0, delivered: 0, failed: 0 };
    endpoints.push({
      name,
      state: paused ? 'paused' : disabled ? 'disabled' : 'active',
      paused,
      disabled,
      pending: counts.pending,
      url: config.url,
      outcomes: config.outcomes ?? ['allowed', 'denied', 'action-required', 'error'],
      types: config.types ?? [...DEFAULT_WEBHOOK_EVENT_TYPES],
      data: config.data ?? 'standard',
      onExhausted: config.onExhausted ?? 'pause',
      rotating: Boolean(config.previousSecret) && (!config.previousSecretUntil || Date.parse(config.previousSecretUntil) > Date.now()),
      nextSequence: state?.nextSequence ?? 1,
      counts,
      lease:
        state?.leaseHolder && state.leaseExpiresAt && state.leaseExpiresAt > Date.now()
          ? { holder: state.leaseHolder, expiresAt: new Date(state.leaseExpiresAt).toISOString() }
          : null,
    });
  }
  return endpoints;
}

const ENDPOINT = { headers: BEARER_HEADERS, params: pathParameters('endpoint') } as const;
/** The filters of a delivery list, each one value; the handler checks what each must be (WEBHOOK_REQUEST_INVALID). */
const DELIVERIES_QUERY = {
  type: 'object',
  properties: { status: QUERY_TEXT, from: QUERY_TEXT, limit: QUERY_TEXT },
} as const;
/** `{"failed": true}` or `{"from": <sequence>}`: which one, and its value, the handler checks. */
const REPLAY_BODY = {
  type: ['object', 'null'],
  properties: { failed: { description: 'true: every failed event' }, from: { description: 'a sequence number, 1 or more' } },
} as const;

export function registerWebhookRoutes(app: FastifyInstance, webhooks: Webhooks): void {
  const store = webhooks.outbox.store;
  const known = () => [...webhooks.endpoints.keys()].join(', ') || 'none';
  const unknown = (reply: FastifyReply, name: string) =>
    reply.problem('WEBHOOK_ENDPOINT_UNKNOWN', `no webhook endpoint named '${name}' in gateway.yaml (known: ${known()})`, {
      title: 'No such webhook endpoint',
    });
  const invalid = (reply: FastifyReply, detail: string) => reply.problem('WEBHOOK_REQUEST_INVALID', detail, { title: 'Invalid request' });

  app.get('/webhooks', { schema: { headers: BEARER_HEADERS } }, async (_request, reply) => {
    const endpoints = await webhookSummaries(webhooks);
    reply.header('cache-control', 'no-store');
    const answer: AdminWebhookEndpointList = { endpoints };
    return answer;
  });

  app.get('/webhooks/:endpoint/deliveries', { schema: { ...ENDPOINT, querystring: DELIVERIES_QUERY } }, async (request, reply) => {
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

  app.post('/webhooks/:endpoint/replay', { schema: { ...ENDPOINT, body: REPLAY_BODY } }, async (request, reply) => {
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

  // Delivery goes on from the event a pause stopped at (also ends a 410 Gone disable); nothing else changes.
  app.post('/webhooks/:endpoint/resume', { schema: ENDPOINT }, async (request, reply) => {
    const { endpoint } = request.params as { endpoint: string };
    if (!webhooks.endpoints.has(endpoint)) return unknown(reply, endpoint);
    const resumed = await webhooks.resume(endpoint);
    const answer: AdminWebhookResume = { endpoint, ...resumed };
    return answer;
  });

  app.post('/webhooks/:endpoint/test', { schema: ENDPOINT }, async (request, reply) => {
    const { endpoint } = request.params as { endpoint: string };
    if (!webhooks.endpoints.has(endpoint)) return unknown(reply, endpoint);
    const result = await webhooks.sendTest(endpoint);
    const isAcknowledged = result.status !== null && result.status >= 200 && result.status < 300;
    const answer: AdminWebhookTest = { endpoint, ...result, acknowledged: isAcknowledged };
    return answer;
  });
}
