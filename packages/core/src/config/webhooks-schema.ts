/**
 * The `webhooks` section of gateway.yaml: where receipted calls are reported as signed CloudEvents
 * (docs/webhooks.md explains every key and the defaults below).
 */

/** Documented delivery defaults; the dispatcher reads them from here so the docs and the code agree. */
export const WEBHOOK_RETRY_DEFAULTS = {
  /** Attempts per event (the first one included) before it is marked failed. */
  attempts: 8,
  /** Backoff before the second attempt; doubles each attempt, with full jitter. */
  initialDelayMs: 1_000,
  /** Cap of the backoff and of a receiver's Retry-After. */
  maxDelayMs: 300_000,
  /** One attempt's deadline (connect + response). */
  timeoutMs: 10_000,
} as const;

export type WebhookOutcome = 'allowed' | 'denied' | 'action-required' | 'error';

/** The CloudEvents `type` of a receipted call. */
export const RECEIPT_EVENT_TYPE = 'io.service.call.receipted';
/** The CloudEvents `type` of a signed checkpoint of the receipt log. */
export const CHECKPOINT_EVENT_TYPE = 'io.service.receipts.checkpoint';
/** The CloudEvents `type` of a receipted one-call approval decision (approved, denied) or expiry. */
export const APPROVAL_EVENT_TYPE = 'io.service.approval.receipted';
/** The CloudEvents `type` of a receipted action an operator took in the console. */
export const CONSOLE_EVENT_TYPE = 'io.service.console.receipted';
/** The event types an endpoint may subscribe to with `types:`, in the ordered stream. */
export const WEBHOOK_EVENT_TYPES = [RECEIPT_EVENT_TYPE, CHECKPOINT_EVENT_TYPE, APPROVAL_EVENT_TYPE, CONSOLE_EVENT_TYPE] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/**
 * What an endpoint gets without `types:`: every receipt of the log (receipted calls, approvals, console actions),
 * so the default stream has no gap in receipt numbers; signed checkpoints only when asked for.
 */
export const DEFAULT_WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = [RECEIPT_EVENT_TYPE, APPROVAL_EVENT_TYPE, CONSOLE_EVENT_TYPE];

/**
 * A receipt event's `data`: `standard` is exactly `{ tool, outcome, receipt: "receipt-<n>" }`; `detailed` adds
 * `details`, the whole receipt.
 */
export type WebhookDataMode = 'standard' | 'detailed';

/**
 * When an event's attempts run out: `pause` stops the endpoint at that event (later ones wait, order kept)
 * until `gateway webhooks resume`; `skip` marks it `failed` and moves on (a gap until `replay --failed`).
 */
export type WebhookExhaustedAction = 'pause' | 'skip';

export interface WebhookEndpointConfig {
  url: string;
  /** Vault name of the `whsec_…` signing secret. */
  secret: string;
  /** Vault name of the secret being rotated out: both signatures are sent while it is listed. */
  previousSecret?: string;
  /** ISO 8601 time after which `previousSecret` is no longer used, even if still listed. */
  previousSecretUntil?: string;
  /** Which receipted calls are sent, by outcome (default: all); approval and console events are chosen by `types`. */
  outcomes?: WebhookOutcome[];
  /** CloudEvents types delivered to this endpoint (default: every receipt's type; checkpoints when listed). */
  types?: WebhookEventType[];
  /** The shape of a receipt event's `data` (default `standard`). */
  data?: WebhookDataMode;
  /** What happens when an event's attempts run out (default `pause`). */
  onExhausted?: WebhookExhaustedAction;
  retry?: { attempts?: number; initialDelayMs?: number; maxDelayMs?: number; timeoutMs?: number };
}

export type WebhooksConfig = Record<string, WebhookEndpointConfig>;

export const webhooksSchema = {
  type: 'object',
  description: 'endpoints that receive receipted calls (and, with types, signed checkpoints) as signed CloudEvents (docs/webhooks.md)',
  propertyNames: { pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' },
  additionalProperties: {
    type: 'object',
    required: ['url', 'secret'],
    additionalProperties: false,
    properties: {
      url: {
        type: 'string',
        // https everywhere; plain http only to a loopback host (the SSRF guard still decides at connect time).
        pattern: '^(https://[^\\s]+|http://(localhost|127\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}|\\[::1\\])(:\\d{1,5})?(/[^\\s]*)?)$',
        description: 'https URL (plain http only for loopback hosts)',
      },
      secret: { type: 'string', minLength: 1, description: 'vault name of the whsec_… signing secret' },
      previousSecret: {
        type: 'string',
        minLength: 1,
        description: 'vault name of the secret being rotated out (both signatures are sent)',
      },
      previousSecretUntil: { type: 'string', format: 'date-time', description: 'stop signing with previousSecret after this time' },
      outcomes: {
        type: 'array',
        minItems: 1,
        uniqueItems: true,
        items: { enum: ['allowed', 'denied', 'action-required', 'error'] },
        description: 'which receipted calls to send, by outcome (default: all); approval and console events are chosen by types',
      },
      types: {
        type: 'array',
        minItems: 1,
        uniqueItems: true,
        items: { enum: [...WEBHOOK_EVENT_TYPES] },
        description: `CloudEvents types to deliver, in one ordered stream (default: [${DEFAULT_WEBHOOK_EVENT_TYPES.join(', ')}])`,
      },
      data: {
        enum: ['standard', 'detailed'],
        default: 'standard',
        description: "a receipt event's data: standard {tool, outcome, receipt: 'receipt-<n>'}; detailed adds details (the receipt)",
      },
      onExhausted: {
        enum: ['pause', 'skip'],
        default: 'pause',
        description: "when an event's attempts run out: pause the endpoint at it (order kept) or skip it (marked failed)",
      },
      retry: {
        type: 'object',
        additionalProperties: false,
        properties: {
          attempts: { type: 'integer', minimum: 1, maximum: 100, default: WEBHOOK_RETRY_DEFAULTS.attempts },
          initialDelayMs: { type: 'integer', minimum: 1, default: WEBHOOK_RETRY_DEFAULTS.initialDelayMs },
          maxDelayMs: { type: 'integer', minimum: 1, default: WEBHOOK_RETRY_DEFAULTS.maxDelayMs },
          timeoutMs: { type: 'integer', minimum: 1, default: WEBHOOK_RETRY_DEFAULTS.timeoutMs },
        },
      },
    },
  },
} as const;
