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

export type WebhookOutcome = 'allowed' | 'denied' | 'error';

export interface WebhookEndpointConfig {
  url: string;
  /** Vault name of the `whsec_…` signing secret. */
  secret: string;
  /** Vault name of the secret being rotated out: both signatures are sent while it is listed. */
  previousSecret?: string;
  /** ISO 8601 time after which `previousSecret` is no longer used, even if still listed. */
  previousSecretUntil?: string;
  outcomes?: WebhookOutcome[];
  retry?: { attempts?: number; initialDelayMs?: number; maxDelayMs?: number; timeoutMs?: number };
}

export type WebhooksConfig = Record<string, WebhookEndpointConfig>;

export const webhooksSchema = {
  type: 'object',
  description: 'endpoints that receive each receipted call as a signed CloudEvent (docs/webhooks.md)',
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
        items: { enum: ['allowed', 'denied', 'error'] },
        description: 'which receipts to send (default: all)',
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
