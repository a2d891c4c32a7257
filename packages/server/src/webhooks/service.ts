import { randomUUID } from 'node:crypto';
import { GatewayError, type LoadedConfig, type WebhookEndpointConfig } from '@gateway/core';
import type { Dispatcher } from 'undici';
import type { Vault } from '@gateway/runtime';
import { createDispatcher, type DispatcherEndpoint, type DispatcherLogger, type WebhookDispatcher } from '../outbox/dispatcher.js';
import type { DeliveryTelemetry } from '../outbox/delivery-telemetry.js';
import { testEventBody } from '../outbox/event.js';
import { createOutbox, type Outbox, type OutboxEndpoint } from '../outbox/outbox.js';
import type { OutboxStore, ReplaySelection, ResumedEndpoint } from '../outbox/ports.js';
import type { ChangeFeed } from '../store/changes.js';
import { cachedEndpointSecrets } from './secrets.js';

export { endpointSecrets } from './secrets.js';

export interface Webhooks {
  readonly outbox: Outbox;
  readonly dispatcher: WebhookDispatcher;
  readonly endpoints: ReadonlyMap<string, WebhookEndpointConfig>;
  /**
   * Ends an endpoint's pause (or 410 Gone disable): delivery goes on from the event it stopped at, with a
   * fresh cycle of attempts. Every process sees it through the database; this one is woken at once.
   */
  resume(endpoint: string): Promise<ResumedEndpoint>;
  /** Puts the selected events back to pending and re-enables (resumes) the endpoint; resolves how many. */
  replay(endpoint: string, selection: ReplaySelection): Promise<number>;
  /** Sends a signed test event to one endpoint now, outside the ordered stream. */
  sendTest(endpoint: string): Promise<{ eventId: string; status: number | null; error: string | null }>;
  start(): void;
  stop(): Promise<void>;
}

export interface CreateWebhooksOptions {
  loaded: LoadedConfig;
  /** The outbox's storage, on the database the receipt log writes to (so receipts and events commit together). */
  store: OutboxStore;
  vault: Vault;
  /** The SSRF-guarded agent (network.allowPrivateNetworks applies). */
  agent: Dispatcher;
  logger?: DispatcherLogger;
  /** Lease length (tests shorten it). */
  leaseMs?: number;
  /** How often an idle dispatcher looks for work on its own (default 1 s; tests lengthen it). */
  pollIntervalMs?: number;
  /** Metrics and traces of delivery attempts (telemetry/). */
  telemetry?: DeliveryTelemetry;
  /**
   * Shared by every process on the database: a pause or resume here is announced (`webhook-endpoint`), and one
   * announced elsewhere wakes this process's dispatcher to read the endpoint's state again at once.
   */
  changes?: ChangeFeed;
}

/** What the dispatcher delivers to, from `webhooks:`; each endpoint's secrets are read once here. */
async function dispatcherEndpoints(vault: Vault, configured: ReadonlyMap<string, WebhookEndpointConfig>): Promise<DispatcherEndpoint[]> {
  const endpoints: DispatcherEndpoint[] = [];
  for (const [name, config] of configured) {
    endpoints.push({
      name,
      url: config.url,
      ...(config.retry ? { retry: config.retry } : {}),
      onExhausted: config.onExhausted ?? 'pause',
      secrets: await cachedEndpointSecrets(vault, name, config),
    });
  }
  return endpoints;
}

/** What the outbox appends for, from `webhooks:`: each endpoint's outcomes, event types and data shape. */
function outboxEndpoints(configured: ReadonlyMap<string, WebhookEndpointConfig>): OutboxEndpoint[] {
  return [...configured].map(([name, config]) => ({
    name,
    ...(config.outcomes ? { outcomes: config.outcomes } : {}),
    ...(config.types ? { types: config.types } : {}),
    ...(config.data ? { data: config.data } : {}),
  }));
}

/**
 * The webhooks area: the outbox (the receipt log's hook) and the dispatcher, from `webhooks:` in
 * gateway.yaml. Start-up reads every secret once, so a missing or malformed one stops the gateway with its
 * name instead of failing every delivery later.
 */
export async function createWebhooks(options: CreateWebhooksOptions): Promise<Webhooks> {
  const configured = new Map(Object.entries(options.loaded.config.webhooks ?? {}));
  const endpoints = await dispatcherEndpoints(options.vault, configured);
  const outbox = createOutbox({ store: options.store, endpoints: outboxEndpoints(configured) });
  await outbox.ready;
  const { changes, logger } = options;
  const announce = (endpoint: string, state: 'paused' | 'resumed') => {
    changes?.publish('webhook-endpoint', { endpoint, state }).catch((error: unknown) => {
      logger?.warn({ endpoint, error: (error as Error).message }, 'announcing a webhook endpoint change failed');
    });
  };
  const dispatcher = createDispatcher({
    onPaused: (endpoint) => announce(endpoint, 'paused'),
    store: outbox.store,
    endpoints,
    agent: options.agent,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
    ...(options.pollIntervalMs ? { pollIntervalMs: options.pollIntervalMs } : {}),
    ...(options.telemetry ? { telemetry: options.telemetry } : {}),
  });
  let unsubscribe: (() => void) | undefined;
  let stopListening: (() => void) | undefined;
  return {
    outbox,
    dispatcher,
    endpoints: configured,
    async resume(endpoint) {
      if (!configured.has(endpoint)) throw unknownEndpoint(endpoint, configured);
      const resumed = await outbox.store.resume(endpoint);
      dispatcher.notify({ reread: true });
      announce(endpoint, 'resumed');
      return resumed;
    },
    async replay(endpoint, selection) {
      if (!configured.has(endpoint)) throw unknownEndpoint(endpoint, configured);
      const replayed = await outbox.store.replay(endpoint, selection);
      dispatcher.notify({ reread: true });
      announce(endpoint, 'resumed');
      return replayed;
    },
    async sendTest(endpoint) {
      if (!configured.has(endpoint)) throw unknownEndpoint(endpoint, configured);
      const eventId = `evt_test_${randomUUID()}`;
      const result = await dispatcher.sendOnce(endpoint, eventId, testEventBody(eventId, endpoint, new Date()));
      return { eventId, status: result.status, error: result.error };
    },
    start() {
      unsubscribe ??= outbox.subscribe((committed) => dispatcher.notify({ committed }));
      stopListening ??= changes?.subscribe('webhook-endpoint', ({ endpoint }) => {
        if (configured.has(endpoint)) dispatcher.notify({ reread: true });
      });
      dispatcher.start();
    },
    async stop() {
      unsubscribe?.();
      stopListening?.();
      await dispatcher.stop();
    },
  };
}

export function unknownEndpoint(name: string, configured: ReadonlyMap<string, unknown>): GatewayError {
  const known = [...configured.keys()];
  return new GatewayError(
    'WEBHOOK_ENDPOINT_UNKNOWN',
    `no webhook endpoint named '${name}' in gateway.yaml${known.length ? ` (known: ${known.join(', ')})` : ' (no webhooks configured)'}`,
  );
}
