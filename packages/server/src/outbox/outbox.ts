import {
  CHECKPOINT_EVENT_TYPE,
  DEFAULT_WEBHOOK_EVENT_TYPES,
  RECEIPT_EVENT_TYPE,
  type Receipt,
  type ReceiptOutcome,
  type WebhookDataMode,
  type WebhookEventType,
} from '@gateway/core';
import type { SqliteDatabase } from '../store/sqlite/database.js';
import type { Transaction } from '../store/unit-of-work.js';
import { checkpointEventBody, checkpointEventId, receiptEventBody, receiptEventId, type CheckpointEventSource } from './event.js';
import { SqliteOutboxStore, type OutboxEvent, type OutboxStore } from './store.js';
import { runInBackground } from '../scheduling/background-lane.js';

export interface OutboxEndpoint {
  name: string;
  /** Only receipts with these outcomes become events (default: all). */
  outcomes?: readonly ReceiptOutcome[];
  /** CloudEvents types this endpoint subscribes to (default: receipted calls only). */
  types?: readonly WebhookEventType[];
  /** The shape of a receipt event's `data` (default `standard`). */
  data?: WebhookDataMode;
}

export interface Outbox {
  /**
   * The receipt log's hook: called synchronously inside the receipt's transaction, it appends one event per
   * subscribed endpoint with that endpoint's next sequence, so the receipt and its events commit together.
   */
  enqueue(receipt: Receipt): OutboxEvent[];
  /** The same function under the hook's name (`{ onReceipt }`), in the receipt's unit of work `tx`. */
  onReceipt(receipt: Receipt, tx: Transaction): void;
  /**
   * The receipt log's checkpoint hook: called synchronously inside the transaction that stores a newly signed
   * checkpoint, it appends one checkpoint event per endpoint subscribed to its type, in the same per-endpoint
   * sequence as receipt events, so the checkpoint row and its events commit together.
   */
  onCheckpoint(checkpoint: CheckpointEventSource, tx: Transaction): void;
  /** The receipt log's after-commit hook: these receipts' events are now stored for good. */
  afterCommit(receipts: readonly Receipt[]): void;
  readonly store: OutboxStore;
  /**
   * Called (after the current transaction, on a later tick) whenever events were appended, with the events
   * known to be committed since the last call (empty when only a wake is known: read the store).
   */
  subscribe(listener: (committed: readonly OutboxEvent[]) => void): () => void;
}

export interface CreateOutboxOptions {
  /** The database the receipt log writes to: the same handle, so the hook joins its transaction. */
  database: SqliteDatabase;
  endpoints: readonly OutboxEndpoint[];
  /** Another store (a PostgreSQL one later); default: SQLite on `database`. */
  store?: OutboxStore;
}

export function createOutbox(options: CreateOutboxOptions): Outbox {
  const store = options.store ?? new SqliteOutboxStore(options.database);
  void store.ensureEndpoints(options.endpoints.map((endpoint) => endpoint.name));
  const subscriptions = options.endpoints.map((endpoint) => {
    const types = new Set<WebhookEventType>(endpoint.types ?? DEFAULT_WEBHOOK_EVENT_TYPES);
    return {
      name: endpoint.name,
      outcomes: endpoint.outcomes ? new Set(endpoint.outcomes) : undefined,
      data: endpoint.data ?? 'standard',
      receipts: types.has(RECEIPT_EVENT_TYPE),
      checkpoints: types.has(CHECKPOINT_EVENT_TYPE),
    };
  });
  const listeners = new Set<(committed: readonly OutboxEvent[]) => void>();
  let isWakeScheduled = false;
  // Appended in the current transaction; published by afterCommit, forgotten if it rolls back (appends are
  // synchronous and serialised, so whatever is staged when receipts commit belongs to them or to a rollback).
  let staged: OutboxEvent[] = [];
  let committed: OutboxEvent[] = [];
  // Checkpoint events are not handed over (they commit outside the receipts' transactions): when some were
  // appended, the next wake names no events, and the dispatcher reads the store.
  let isReadNeeded = false;
  // A later tick: by then the receipt's transaction has committed (or rolled back, and there is nothing to find).
  const wake = () => {
    if (isWakeScheduled) return;
    isWakeScheduled = true;
    runInBackground(() => {
      isWakeScheduled = false;
      const events = isReadNeeded ? [] : committed;
      committed = [];
      isReadNeeded = false;
      for (const listener of listeners) listener(events);
    });
  };

  const enqueue = (receipt: Receipt): OutboxEvent[] => {
    const appended: OutboxEvent[] = [];
    for (const subscription of subscriptions) {
      if (!subscription.receipts) continue;
      if (subscription.outcomes && !subscription.outcomes.has(receipt.outcome)) continue;
      const eventId = receiptEventId(receipt.id, subscription.name);
      appended.push(
        store.append(subscription.name, (sequence) => ({
          eventId,
          receiptId: receipt.id,
          body: receiptEventBody(receipt, eventId, sequence, subscription.data),
        })),
      );
    }
    if (appended.length > 0) {
      staged.push(...appended);
      wake();
    }
    return appended;
  };

  return {
    enqueue,
    onReceipt: (receipt, _tx) => {
      enqueue(receipt);
    },
    onCheckpoint: (checkpoint, _tx) => {
      let isAppended = false;
      for (const subscription of subscriptions) {
        if (!subscription.checkpoints) continue;
        const eventId = checkpointEventId(checkpoint.treeSize, subscription.name);
        store.append(subscription.name, (sequence) => ({
          eventId,
          receiptId: null,
          body: checkpointEventBody(checkpoint, eventId, sequence),
        }));
        isAppended = true;
      }
      if (isAppended) {
        isReadNeeded = true;
        wake();
      }
    },
    afterCommit: (receipts) => {
      const ids = new Set(receipts.map((receipt) => receipt.id));
      for (const event of staged) if (event.receiptId !== null && ids.has(event.receiptId)) committed.push(event);
      staged = [];
    },
    store,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
