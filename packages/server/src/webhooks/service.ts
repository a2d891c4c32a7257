import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { GatewayError, type LoadedConfig, type WebhookEndpointConfig } from '@gateway/core';
import type { Dispatcher } from 'undici';
import type { Vault } from '@gateway/runtime';
import { createDispatcher, type DispatcherEndpoint, type DispatcherLogger, type WebhookDispatcher } from '../outbox/dispatcher.js';
import type { DeliveryTelemetry } from '../outbox/delivery-telemetry.js';
import { testEventBody } from '../outbox/event.js';
import { createOutbox, type Outbox } from '../outbox/outbox.js';
import type { SqliteDatabase } from '../store/sqlite/database.js';

/** How long a secret read from the vault is reused before it is read again (rotation takes effect within). */
const SECRET_CACHE_MS = 30_000;

export interface Webhooks {
  readonly outbox: Outbox;
  readonly dispatcher: WebhookDispatcher;
  readonly endpoints: ReadonlyMap<string, WebhookEndpointConfig>;
  /**
   * Ends an endpoint's pause (or 410 Gone disable): delivery goes on from the event it stopped at, with a
   * fresh cycle of attempts. Every process sees it through the database; this one is woken at once.
   */
  resume(endpoint: string): Promise<{ pausedSequence: number | null; wasPaused: boolean; wasDisabled: boolean }>;
  /** Sends a signed test event to one endpoint now, outside the ordered stream. */
  sendTest(endpoint: string): Promise<{ eventId: string; status: number | null; error: string | null }>;
  start(): void;
  stop(): Promise<void>;
}

export interface CreateWebhooksOptions {
  loaded: LoadedConfig;
  database: SqliteDatabase;
  vault: Vault;
  /** The SSRF-guarded agent (network.allowPrivateNetworks applies). */
  agent: Dispatcher;
  logger?: DispatcherLogger;
  /** Lease length (tests shorten it). */
  leaseMs?: number;
  /** Metrics and traces of delivery attempts (telemetry/). */
  telemetry?: DeliveryTelemetry;
}

async function readSecret(vault: Vault, endpoint: string, name: string, key: string): Promise<string> {
  const value = await vault.get(name);
  if (value === undefined) {
    throw new GatewayError('WEBHOOK_SECRET_MISSING', `webhooks.${endpoint}.${key}: the vault has no secret named '${name}'`);
  }
  try {
    new Webhook(value);
  } catch {
    // Never echo the value: it is a secret even when malformed.
    throw new GatewayError(
      'WEBHOOK_SECRET_INVALID',
      `webhooks.${endpoint}.${key}: the vault secret '${name}' is not a Standard Webhooks secret (whsec_ followed by base64)`,
    );
  }
  return value;
}

/**
 * The signing secrets of an endpoint, current first, then the previous one while a rotation overlaps
 * (`previousSecret` listed and `previousSecretUntil`, when given, not yet passed).
 */
export async function endpointSecrets(vault: Vault, name: string, config: WebhookEndpointConfig, now = Date.now()): Promise<string[]> {
  const secrets = [await readSecret(vault, name, config.secret, 'secret')];
  const until = config.previousSecretUntil ? Date.parse(config.previousSecretUntil) : Number.POSITIVE_INFINITY;
  if (config.previousSecret && now < until) secrets.push(await readSecret(vault, name, config.previousSecret, 'previousSecret'));
  return secrets;
}

/**
 * The webhooks area: the outbox (the receipt log's hook) and the dispatcher, from `webhooks:` in
 * gateway.yaml. Start-up reads every secret once, so a missing or malformed one stops the gateway with its
 * name instead of failing every delivery later.
 */
export async function createWebhooks(options: CreateWebhooksOptions): Promise<Webhooks> {
  const configured = new Map(Object.entries(options.loaded.config.webhooks ?? {}));
  const cache = new Map<string, { secrets: string[]; readAt: number }>();
  const endpoints: DispatcherEndpoint[] = [];
  for (const [name, config] of configured) {
    cache.set(name, { secrets: await endpointSecrets(options.vault, name, config), readAt: Date.now() });
    endpoints.push({
      name,
      url: config.url,
      ...(config.retry ? { retry: config.retry } : {}),
      onExhausted: config.onExhausted ?? 'pause',
      secrets: async () => {
        const cached = cache.get(name);
        if (cached && Date.now() - cached.readAt < SECRET_CACHE_MS) return cached.secrets;
        const secrets = await endpointSecrets(options.vault, name, config);
        cache.set(name, { secrets, readAt: Date.now() });
        return secrets;
      },
    });
  }
  const outbox = createOutbox({
    database: options.database,
    endpoints: [...configured].map(([name, config]) => ({
      name,
      ...(config.outcomes ? { outcomes: config.outcomes } : {}),
      ...(config.types ? { types: config.types } : {}),
      ...(config.data ? { data: config.data } : {}),
    })),
  });
  const dispatcher = createDispatcher({
    store: outbox.store,
    endpoints,
    agent: options.agent,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
    ...(options.telemetry ? { telemetry: options.telemetry } : {}),
  });
  let unsubscribe: (() => void) | undefined;
  return {
    outbox,
    dispatcher,
    endpoints: configured,
    async resume(endpoint) {
      if (!configured.has(endpoint)) throw unknownEndpoint(endpoint, configured);
      const resumed = await outbox.store.resume(endpoint);
      dispatcher.notify({ reread: true });
      return resumed;
    },
    async sendTest(endpoint) {
      if (!configured.has(endpoint)) throw unknownEndpoint(endpoint, configured);
      const eventId = `evt_test_${randomUUID()}`;
      const result = await dispatcher.sendOnce(endpoint, eventId, testEventBody(eventId, endpoint, new Date()));
      return { eventId, status: result.status, error: result.error };
    },
    start() {
      unsubscribe ??= outbox.subscribe((committed) => dispatcher.notify({ committed }));
      dispatcher.start();
    },
    async stop() {
      unsubscribe?.();
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
