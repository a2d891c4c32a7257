export { createOutbox, type CreateOutboxOptions, type Outbox, type OutboxEndpoint } from './outbox.js';
export {
  createDispatcher,
  parseRetryAfter,
  retryDelayMs,
  retrySettings,
  DEFAULT_LEASE_MS,
  DEFAULT_POLL_INTERVAL_MS,
  type AttemptResult,
  type CreateDispatcherOptions,
  type DispatcherEndpoint,
  type RetrySettings,
  type WebhookDispatcher,
} from './dispatcher.js';
export {
  SqliteOutboxStore,
  type Delivery,
  type EndpointState,
  type NewOutboxEvent,
  type OutboxEvent,
  type OutboxStatus,
  type OutboxStore,
} from './store.js';
export { outboxMigrations } from './migrations.js';
export {
  CLOUDEVENTS_CONTENT_TYPE,
  EVENT_SOURCE,
  RECEIPT_EVENT_TYPE,
  TEST_EVENT_TYPE,
  formatSequence,
  receiptEventBody,
  receiptEventId,
  testEventBody,
} from './event.js';
export { signatureHeaders } from './signature.js';
