export { createWebhooks, endpointSecrets, unknownEndpoint, type CreateWebhooksOptions, type Webhooks } from './service.js';
export { registerWebhookRoutes, webhookSummaries, type WebhookRoutesProblem } from './admin-routes.js';
