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
  type DispatcherLogger,
  type RetrySettings,
  type WebhookDispatcher,
} from './dispatcher.js';
export type {
  Delivery,
  EndpointState,
  NewOutboxEvent,
  OutboxEvent,
  OutboxStatus,
  OutboxStore,
  ReplaySelection,
  ResumedEndpoint,
} from './ports.js';
export {
  CHECKPOINT_EVENT_TYPE,
  CLOUDEVENTS_CONTENT_TYPE,
  EVENT_SOURCE,
  RECEIPT_EVENT_TYPE,
  TEST_EVENT_TYPE,
  checkpointEventBody,
  checkpointEventId,
  formatSequence,
  receiptEventBody,
  receiptEventData,
  receiptEventId,
  testEventBody,
  type CheckpointEventSource,
} from './event.js';
export { signatureHeaders } from './signature.js';
