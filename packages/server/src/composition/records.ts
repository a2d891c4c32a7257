/**
 * What the gateway records and reports: the receipt log (keys from the vault; each process journals in a slot of
 * its own) and the webhook outbox, a receipt hook, so a receipt and its events commit together (docs/receipts.md,
 * docs/webhooks.md).
 */
import type { Logger } from 'pino';
import { GatewayError, type LoadedConfig } from '@gateway/core';
import { createGuardedAgent, type Vault } from '@gateway/runtime';
import type { DeliveryTelemetry } from '../outbox/delivery-telemetry.js';
import { claimJournals } from '../receipts/journal.js';
import { createReceiptLog, type ReceiptLog } from '../receipts/log.js';
import type { GatewayStorage } from './storage.js';
import { createWebhooks, type Webhooks } from '../webhooks/service.js';
import type { Closers } from './closers.js';

export interface RecordsContext {
  loaded: LoadedConfig;
  vault: Vault;
  storage: GatewayStorage;
  logger: Logger;
  dataDirectory: string;
  /** This process is worker `id` of `gateway serve --workers N`; `startsAlone`: no other worker runs yet. */
  worker?: { id: number; startsAlone?: boolean };
  /** Several processes share the receipt log (workers, replicas on PostgreSQL): one shared signing key, one signer at a time. */
  servesTogether: boolean;
  webhookLeaseMs?: number;
  /** Metrics and traces of delivery attempts (telemetry/). */
  deliveryTelemetry?: DeliveryTelemetry;
}

export async function startRecords(
  context: RecordsContext,
  closers: Closers,
): Promise<{ receipts: ReceiptLog | undefined; webhooks: Webhooks | undefined }> {
  const webhooks = await startWebhooks(context, closers);
  const receipts = await startReceipts(context, webhooks, closers);
  // Added after the receipt log's closer, so it runs before it: delivery stops, then the log closes.
  if (webhooks) closers.add(() => webhooks.stop());
  return { receipts, webhooks };
}

async function startWebhooks(context: RecordsContext, closers: Closers): Promise<Webhooks | undefined> {
  const { loaded } = context;
  if (Object.keys(loaded.config.webhooks ?? {}).length === 0) return undefined;
  if (loaded.config.receipts?.enabled === false) {
    throw new GatewayError(
      'WEBHOOKS_REQUIRE_RECEIPTS',
      'webhooks report receipts: remove `receipts.enabled: false` or the `webhooks` section',
    );
  }
  const agent = createGuardedAgent({ allowPrivateNetworks: loaded.config.network?.allowPrivateNetworks ?? [] });
  closers.add(() => agent.close());
  return createWebhooks({
    loaded,
    store: context.storage.outboxStore(),
    vault: context.vault,
    agent,
    logger: context.logger,
    changes: context.storage.changeFeed(),
    ...(context.webhookLeaseMs ? { leaseMs: context.webhookLeaseMs } : {}),
    ...(context.deliveryTelemetry ? { telemetry: context.deliveryTelemetry } : {}),
  });
}

/**
 * The receipt log, unless `receipts.enabled: false`; a final checkpoint at close. The log first moves what an
 * earlier process of its journal slot left there (with the outbox hook, so those receipts get their events too).
 */
async function startReceipts(context: RecordsContext, webhooks: Webhooks | undefined, closers: Closers): Promise<ReceiptLog | undefined> {
  const { loaded, logger, worker } = context;
  if (loaded.config.receipts?.enabled === false) return undefined;
  // On PostgreSQL replicas share the log: a journal is a file of one host, and what a replica that never comes
  // back left in it would be stranded, so each call waits for its receipt's commit instead (durable before the
  // answer, in the shared database). The signing key is the vault's, as with workers: whichever replica holds the
  // `checkpoint-signer` lease signs the log.
  const isShared = context.storage.kind === 'postgres';
  // `receipts.journal: false`: no journal (each call waits for its receipt's commit). The process that starts
  // first (alone, or worker 1 before the others) also takes over the journals of slots nobody serves from now.
  const claimed = claimJournals({
    directory: context.dataDirectory,
    slot: worker ? `worker-${worker.id}` : 'main',
    usesJournal: loaded.config.receipts?.journal !== false && !isShared,
    adoptsOthers: !worker || worker.startsAlone === true,
    warn: (message) => logger.warn(message),
  });
  let log: ReceiptLog;
  try {
    log = await createReceiptLog({
      ...context.storage.receiptStorage(),
      vault: context.vault,
      loaded,
      dataDirectory: context.dataDirectory,
      requiresSharedSigningKey: context.servesTogether,
      // Shared by several processes: one signs the checkpoints at a time, the holder of the signer's lease.
      ...(context.servesTogether ? { signingLease: { leases: context.storage.leases(), changes: context.storage.changeFeed() } } : {}),
      ...(claimed.journal ? { journal: claimed.journal } : {}),
      adopt: claimed.adopt,
      ...(webhooks ? { hooks: [webhooks.outbox] } : {}),
      warn: (message) => logger.warn(message),
      alert: (details, message) => logger.error(details, message),
    });
  } catch (error) {
    claimed.release();
    throw error;
  }
  closers.add(async () => {
    await log.close();
    // The vault's copy of the final checkpoint (the data directory's file is written already).
    await log.anchor.settled();
  });
  return log;
}
