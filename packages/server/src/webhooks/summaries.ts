import { DEFAULT_WEBHOOK_EVENT_TYPES, type AdminWebhookEndpoint } from '@gateway/core';
import type { Webhooks } from './service.js';

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
