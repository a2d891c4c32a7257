import {
  APPROVAL_EVENT_TYPE,
  CHECKPOINT_EVENT_TYPE,
  CONSOLE_EVENT_TYPE,
  DEFAULT_WEBHOOK_EVENT_TYPES,
  RECEIPT_EVENT_TYPE,
  type Receipt,
  type ReceiptOutcome,
  type WebhookDataMode,
  type WebhookEventType,
} from '@gateway/core';
import type { Transaction } from '../store/unit-of-work.js';
import { checkpointEventBody, checkpointEventId, receiptEventBody, receiptEventId, type CheckpointEventSource } from './event.js';
import { createHandover } from './handover.js';
import type { OutboxEvent, OutboxStore } from './ports.js';

export interface OutboxEndpoint {
  name: string;
  /** Only receipted calls with these outcomes become events (default: all); action receipts go by `types`. */
  outcomes?: readonly ReceiptOutcome[];
  /** CloudEvents types this endpoint subscribes to (default: DEFAULT_WEBHOOK_EVENT_TYPES). */
  types?: readonly WebhookEventType[];
  /** The shape of a receipt event's `data` (default `standard`). */
  data?: WebhookDataMode;
}

/**
 * The receipt log's hook. Each method that writes takes the unit of work's transaction (`tx`) of the receipt or
 * checkpoint it reports, so they commit together, and resolves once its events are appended in it. Without a
 * `tx` (a caller that runs the hook synchronously inside its SQLite transaction), the appends join the caller's
 * current transaction, at call time.
 */
export interface Outbox {
  /** Appends one event per subscribed endpoint, with that endpoint's next sequence, in `tx`. */
  enqueue(receipt: Receipt, tx?: Transaction): Promise<OutboxEvent[]>;
  /** The same under the hook's name (`{ onReceipt }`). */
  onReceipt(receipt: Receipt, tx?: Transaction): Promise<void>;
  /**
   * Appends one checkpoint event per endpoint subscribed to its type, in `tx` (the transaction that stores the
   * newly signed checkpoint), in the same per-endpoint sequence as receipt events.
   */
  onCheckpoint(checkpoint: CheckpointEventSource, tx?: Transaction): Promise<void>;
  /**
   * `tx` committed (these receipts, or a checkpoint: no receipts): the events it appended are now stored for
   * good and go to the subscribers. A transaction that rolls back is never named here; its events are dropped.
   */
  afterCommit(receipts: readonly Receipt[], tx?: Transaction): void;
  readonly store: OutboxStore;
  /** Resolves when every configured endpoint has its row in the store. */
  readonly ready: Promise<void>;
  /**
   * Called (after the transaction committed, on a later tick) whenever events were appended, with the events
   * known to be committed since the last call (empty when only a wake is known: read the store).
   */
  subscribe(listener: (committed: readonly OutboxEvent[]) => void): () => void;
}

export interface CreateOutboxOptions {
  /** The outbox's storage: the adapter of the database the receipt log writes to (its units of work). */
  store: OutboxStore;
  endpoints: readonly OutboxEndpoint[];
}

const NO_EVENTS: Promise<OutboxEvent[]> = Promise.resolve([]);
const DONE: Promise<void> = Promise.resolve();
const nothing = (): void => undefined;

export function createOutbox(options: CreateOutboxOptions): Outbox {
  const store = options.store;
  const ready = store.ensureEndpoints(options.endpoints.map((endpoint) => endpoint.name));
  // Awaited by whoever needs the rows; not an unhandled rejection for those that do not.
  ready.catch(nothing);
  const subscriptions = options.endpoints.map((endpoint) => {
    const types = new Set<WebhookEventType>(endpoint.types ?? DEFAULT_WEBHOOK_EVENT_TYPES);
    return {
      name: endpoint.name,
      outcomes: endpoint.outcomes ? new Set(endpoint.outcomes) : undefined,
      data: endpoint.data ?? 'standard',
      receipts: types.has(RECEIPT_EVENT_TYPE),
      checkpoints: types.has(CHECKPOINT_EVENT_TYPE),
      approvals: types.has(APPROVAL_EVENT_TYPE),
      consoleActions: types.has(CONSOLE_EVENT_TYPE),
    };
  });
  const handover = createHandover();

  // Every append is started at call time, before any await: a caller without `tx` is inside a synchronous
  // transaction that commits as soon as the hook returns.
  const enqueue = (receipt: Receipt, tx?: Transaction): Promise<OutboxEvent[]> => {
    const appended: Array<Promise<OutboxEvent>> = [];
    const action = receipt.action;
    for (const subscription of subscriptions) {
      if (action === undefined) {
        if (!subscription.receipts) continue;
        if (subscription.outcomes && !subscription.outcomes.has(receipt.outcome)) continue;
      } else if (!(action.kind === 'approval' ? subscription.approvals : subscription.consoleActions)) continue;
      const eventId = receiptEventId(receipt.id, subscription.name);
      appended.push(
        store.append(tx, subscription.name, (sequence) => ({
          eventId,
          receiptId: receipt.id,
          body: receiptEventBody(receipt, eventId, sequence, subscription.data),
        })),
      );
    }
    if (appended.length === 0) return NO_EVENTS;
    handover.stage(tx, appended, false);
    // A synchronous transaction has committed (or rolled back) by the next tick: wake then, as not every such
    // caller reports its commit. A unit of work's events wait for `afterCommit`.
    if (tx === undefined) handover.wake();
    return Promise.all(appended);
  };

  const onCheckpoint = (checkpoint: CheckpointEventSource, tx?: Transaction): Promise<void> => {
    const appended: Array<Promise<OutboxEvent>> = [];
    for (const subscription of subscriptions) {
      if (!subscription.checkpoints) continue;
      const eventId = checkpointEventId(checkpoint.treeSize, subscription.name);
      appended.push(
        store.append(tx, subscription.name, (sequence) => ({
          eventId,
          receiptId: null,
          body: checkpointEventBody(checkpoint, eventId, sequence),
        })),
      );
    }
    if (appended.length === 0) return DONE;
    if (tx === undefined) handover.wake({ isReadNeeded: true });
    else handover.stage(tx, appended, true);
    return Promise.all(appended).then(nothing);
  };

  return {
    enqueue,
    onReceipt: (receipt, tx) => enqueue(receipt, tx).then(nothing),
    onCheckpoint,
    afterCommit: (receipts, tx) => handover.committed(tx, new Set(receipts.map((receipt) => receipt.id))),
    store,
    ready,
    subscribe: (listener) => handover.subscribe(listener),
  };
}
