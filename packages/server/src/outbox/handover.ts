import { runInBackground } from '../scheduling/background-lane.js';
import type { Transaction } from '../store/unit-of-work.js';
import type { OutboxEvent } from './ports.js';

/**
 * Hands the events a transaction appended to the dispatcher once it has committed, and never before: events are
 * staged per transaction (several units of work may be open at once, their commits in any order), released by
 * `committed(tx)` in commit order, and forgotten with a transaction that rolls back (no `committed` call; the
 * staging is keyed weakly by the transaction object, so it goes with it).
 */
export interface Handover {
  /** Events `tx` appended (still uncommitted); `isCheckpoint`: they report a checkpoint, not receipts. */
  stage(tx: Transaction | undefined, events: readonly Promise<OutboxEvent>[], isCheckpoint: boolean): void;
  /** `tx` committed these receipts: the events it staged for them go to the listeners, then a wake. */
  committed(tx: Transaction | undefined, receiptIds: ReadonlySet<string>): void;
  /** Wakes the listeners on a later tick with what is known to be committed (for callers without `committed`). */
  wake(options?: { isReadNeeded?: boolean }): void;
  subscribe(listener: (committed: readonly OutboxEvent[]) => void): () => void;
}

interface Staged {
  events: Array<Promise<OutboxEvent>>;
  hasCheckpoint: boolean;
}

/**
 * The key of what a caller that passes no transaction appends: the caller's current SQLite transaction, which
 * is synchronous, so it is over before any other can append (what it staged belongs to the receipts its
 * `committed` names, or to a transaction that rolled back: the receipt ids tell them apart).
 */
const CURRENT_TRANSACTION: object = Object.freeze({});

export function createHandover(): Handover {
  const staged = new WeakMap<object, Staged>();
  const listeners = new Set<(committed: readonly OutboxEvent[]) => void>();
  let isWakeScheduled = false;
  let committedEvents: OutboxEvent[] = [];
  // Checkpoint events are not handed over (they commit outside the receipts' transactions): when some were
  // appended, the next wake names no events, and the dispatcher reads the store.
  let isReadNeeded = false;
  // Releases run one after another, so listeners see transactions' events in the order they committed.
  let releases: Promise<void> = Promise.resolve();

  const wake = (options?: { isReadNeeded?: boolean }): void => {
    if (options?.isReadNeeded) isReadNeeded = true;
    if (isWakeScheduled) return;
    isWakeScheduled = true;
    runInBackground(() => {
      isWakeScheduled = false;
      const events = isReadNeeded ? [] : committedEvents;
      committedEvents = [];
      isReadNeeded = false;
      for (const listener of listeners) listener(events);
    });
  };

  return {
    stage(tx, events, isCheckpoint) {
      const key = tx ?? CURRENT_TRANSACTION;
      let entry = staged.get(key);
      if (!entry) {
        entry = { events: [], hasCheckpoint: false };
        staged.set(key, entry);
      }
      if (isCheckpoint) entry.hasCheckpoint = true;
      else entry.events.push(...events);
    },
    committed(tx, receiptIds) {
      const key = tx ?? CURRENT_TRANSACTION;
      const entry = staged.get(key);
      if (!entry) return;
      staged.delete(key);
      releases = releases
        .then(() => Promise.all(entry.events))
        .then(
          (events) => {
            // An event of a receipt this commit does not name was staged by a transaction that rolled back.
            for (const event of events) if (event.receiptId !== null && receiptIds.has(event.receiptId)) committedEvents.push(event);
            wake({ isReadNeeded: entry.hasCheckpoint });
          },
          // An append that failed failed its transaction too: nothing to hand over; the dispatcher reads the store.
          () => wake({ isReadNeeded: true }),
        );
    },
    wake,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
