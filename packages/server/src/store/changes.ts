import type { Transaction } from './unit-of-work.js';

/**
 * The change feed: what one process changes that every other process serving from the same database must act on
 * within a second (`serve --workers N` on one SQLite file, replicas on one PostgreSQL). A change names what
 * changed by id only, never a secret or a value a receiver could act on without reading the store: the receiver
 * re-reads what it needs. Delivery is at least once per feed and subscriber, to every feed on the database (the
 * publisher's own included), and a receiver's action is idempotent (re-read, reload, wake).
 *
 * Adapters: SQLite (./sqlite/changes.ts, a `changes` table polled at a bounded interval) and PostgreSQL
 * (./postgres/changes.ts, LISTEN/NOTIFY on a dedicated connection, a catch-up read of the same table after a
 * reconnect). ./contract/changes.contract.ts states the rules.
 */
export interface ChangePayloads {
  /**
   * A process without the `checkpoint-signer` lease saw the receipt tree reach `treeSize` with no checkpoint over
   * it due (N receipts, an export, a verification): the holder signs one (receipts/checkpointing.ts).
   */
  'checkpoint-due': { treeSize: number };
  /** A session was revoked (or otherwise ended before its expiry): its state is read again. */
  'session-ended': { sessionId: string };
  /** The drift leader recorded another set of blocked tools for a source: followers apply the recorded state. */
  'drift-blocks': { source: string };
  /** A process swapped in another publication (lock digest now served): the others re-read their lock. */
  'publication-changed': { digest: string };
  /** A webhook endpoint was paused (its attempts ran out) or resumed: dispatchers re-read its state. */
  'webhook-endpoint': { endpoint: string; state: 'paused' | 'resumed' };
}

export type ChangeTopic = keyof ChangePayloads;

export const CHANGE_TOPICS: readonly ChangeTopic[] = [
  'checkpoint-due',
  'drift-blocks',
  'publication-changed',
  'session-ended',
  'webhook-endpoint',
];

/** How long the table keeps a change: the longest outage after which a reconnecting feed still catches up. */
export const CHANGE_RETENTION_MS = 60 * 60_000;

export interface ChangeFeed {
  /**
   * Records the change. Given `tx` (a unit of work of the same adapter), it is part of that transaction:
   * announced once it commits, never when it rolls back. Without `tx`, it is committed when the promise resolves.
   */
  publish<T extends ChangeTopic>(topic: T, payload: ChangePayloads[T], tx?: Transaction): Promise<void>;
  /** Calls `handler` for each change of `topic` published from now on (a throwing handler stops no other). */
  subscribe<T extends ChangeTopic>(topic: T, handler: (payload: ChangePayloads[T]) => void): () => void;
  /** Stops listening; nothing is delivered after it resolves. */
  close(): Promise<void>;
}

/** The handlers of one feed by topic, and the delivery every adapter shares (a throwing handler is only reported). */
export class ChangeSubscribers {
  private readonly handlers = new Map<string, Set<(payload: never) => void>>();

  constructor(private readonly onHandlerError: (error: unknown) => void = () => undefined) {}

  get size(): number {
    let count = 0;
    for (const set of this.handlers.values()) count += set.size;
    return count;
  }

  add<T extends ChangeTopic>(topic: T, handler: (payload: ChangePayloads[T]) => void): () => void {
    let set = this.handlers.get(topic);
    if (!set) {
      set = new Set();
      this.handlers.set(topic, set);
    }
    const entry = handler as (payload: never) => void;
    set.add(entry);
    return () => {
      set.delete(entry);
    };
  }

  deliver(topic: string, payload: unknown): void {
    for (const handler of this.handlers.get(topic) ?? []) {
      try {
        handler(payload as never);
      } catch (error) {
        this.onHandlerError(error);
      }
    }
  }
}
