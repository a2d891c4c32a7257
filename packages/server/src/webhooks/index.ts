export { createWebhooks, endpointSecrets, unknownEndpoint, type CreateWebhooksOptions, type Webhooks } from './service.js';
export { webhookSummaries } from './summaries.js';
