import type { Receipt, ReceiptOutcome } from '@gateway/core';
import type { SqliteDatabase } from '../store/database.js';
import { receiptEventBody, receiptEventId } from './event.js';
import { SqliteOutboxStore, type OutboxEvent, type OutboxStore } from './store.js';
import { runInBackground } from '../scheduling/background-lane.js';

export interface OutboxEndpoint {
  name: string;
  /** Only receipts with these outcomes become events (default: all). */
  outcomes?: readonly ReceiptOutcome[];
}

export interface Outbox {
  /**
   * The receipt log's hook: called synchronously inside the receipt's transaction, it appends one event per
   * subscribed endpoint with that endpoint's next sequence, so the receipt and its events commit together.
   */
  enqueue(receipt: Receipt): OutboxEvent[];
  /** The same function under the hook's name (`{ onReceipt }`). */
  onReceipt(receipt: Receipt): void;
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
  const subscriptions = options.endpoints.map((endpoint) => ({
    name: endpoint.name,
    outcomes: endpoint.outcomes ? new Set(endpoint.outcomes) : undefined,
  }));
  const listeners = new Set<(committed: readonly OutboxEvent[]) => void>();
  let isWakeScheduled = false;
  // Appended in the current transaction; published by afterCommit, forgotten if it rolls back (appends are
  // synchronous and serialised, so whatever is staged when receipts commit belongs to them or to a rollback).
  let staged: OutboxEvent[] = [];
  let committed: OutboxEvent[] = [];
  // A later tick: by then the receipt's transaction has committed (or rolled back, and there is nothing to find).
  const wake = () => {
    if (isWakeScheduled) return;
    isWakeScheduled = true;
    runInBackground(() => {
      isWakeScheduled = false;
      const events = committed;
      committed = [];
      for (const listener of listeners) listener(events);
    });
  };

  const enqueue = (receipt: Receipt): OutboxEvent[] => {
    const appended: OutboxEvent[] = [];
    for (const subscription of subscriptions) {
      if (subscription.outcomes && !subscription.outcomes.has(receipt.outcome)) continue;
      const eventId = receiptEventId(receipt.id, subscription.name);
      appended.push(
        store.append(subscription.name, (sequence) => ({
          eventId,
          receiptId: receipt.id,
          body: receiptEventBody(receipt, eventId, sequence),
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
    onReceipt: (receipt) => {
      enqueue(receipt);
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
