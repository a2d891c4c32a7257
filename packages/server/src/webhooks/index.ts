export { createWebhooks, endpointSecrets, unknownEndpoint, type CreateWebhooksOptions, type Webhooks } from './service.js';
export { registerWebhookRoutes, webhookSummaries } from './admin-routes.js';
