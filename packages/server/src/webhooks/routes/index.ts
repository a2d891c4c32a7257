/**
 * `/admin/webhooks…`: what `gateway webhooks list | deliveries | replay | resume | test` read and do, one file per
 * endpoint in this folder. Registered inside the admin plugin, behind its bearer token.
 */
import type { FastifyInstance } from 'fastify';
import { registerDeliveriesRoute } from './deliveries.js';
import { registerListRoute } from './list.js';
import { webhookRouteContext } from './problems.js';
import { registerReplayRoute } from './replay.js';
import { registerResumeRoute } from './resume.js';
import { registerTestEventRoute } from './test-event.js';
import type { Webhooks } from '../service.js';

export function registerWebhookRoutes(app: FastifyInstance, webhooks: Webhooks): void {
  const context = webhookRouteContext(webhooks);
  registerListRoute(app, context);
  registerDeliveriesRoute(app, context);
  registerReplayRoute(app, context);
  registerResumeRoute(app, context);
  registerTestEventRoute(app, context);
}
