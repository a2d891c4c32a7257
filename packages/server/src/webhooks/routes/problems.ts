import type { ErrorCode } from '@gateway/core';
import type { FastifyReply } from 'fastify';
import type { Webhooks } from '../service.js';

export interface WebhookRoutesProblem {
  status: number;
  code: ErrorCode;
  title: string;
  detail: string;
}

export type SendProblem = (reply: FastifyReply, problem: WebhookRoutesProblem) => FastifyReply;

/** What every `/admin/webhooks…` route needs: the area, and its two refusals (unknown endpoint, invalid request). */
export interface WebhookRouteContext {
  webhooks: Webhooks;
  unknown(reply: FastifyReply, name: string): FastifyReply;
  invalid(reply: FastifyReply, detail: string): FastifyReply;
}

export function webhookRouteContext(webhooks: Webhooks, sendProblem: SendProblem): WebhookRouteContext {
  return {
    webhooks,
    unknown: (reply, name) =>
      sendProblem(reply, {
        status: 404,
        code: 'WEBHOOK_ENDPOINT_UNKNOWN',
        title: 'No such webhook endpoint',
        detail: `no webhook endpoint named '${name}' in gateway.yaml (known: ${[...webhooks.endpoints.keys()].join(', ') || 'none'})`,
      }),
    invalid: (reply, detail) => sendProblem(reply, { status: 400, code: 'WEBHOOK_REQUEST_INVALID', title: 'Invalid request', detail }),
  };
}
