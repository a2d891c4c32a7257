import type { DispatcherEndpoint } from './attempt.js';
import type { OutboxEvent, OutboxStore } from './ports.js';
import { retrySettings, type RetrySettings } from './retry.js';

/** How many pending events a worker reads in one query (it still sends them one at a time, in order). */
export const READ_AHEAD = 100;

/** One endpoint's delivery state in this process: its lease and the pending events it read ahead. */
export interface Worker {
  endpoint: DispatcherEndpoint;
  settings: RetrySettings;
  leaseValidUntil: number;
  wake: (() => void) | undefined;
  running: Promise<void> | undefined;
  /** Pending events read ahead, lowest sequence first; the head is the one being delivered. */
  queue: OutboxEvent[];
  mustReread: boolean;
  /**
   * Set when the queue holds every pending event up to this sequence and none above it was pending at the
   * last read: an event with the next sequence may then join the queue without a read (sequences have no
   * holes). Undefined whenever that is not known (start, a failure, a replay, another process's events).
   */
  caughtUpThrough: number | undefined;
  /** The highest sequence this worker has had in its queue. */
  lastSeen: number | undefined;
  /** A read of pending events is in flight (an asynchronous store): events committed meanwhile are not known. */
  isReading: boolean;
  wasNotifiedWhileReading: boolean;
}

export function createWorker(endpoint: DispatcherEndpoint): Worker {
  return {
    endpoint,
    settings: retrySettings(endpoint.retry),
    leaseValidUntil: 0,
    wake: undefined,
    running: undefined,
    queue: [],
    mustReread: false,
    caughtUpThrough: undefined,
    lastSeen: undefined,
    isReading: false,
    wasNotifiedWhileReading: false,
  };
}

/** Forgets what was read ahead (after a failure, a lost lease, a replay). */
export function forgetReadAhead(worker: Worker): void {
  worker.queue = [];
  worker.mustReread = false;
  worker.caughtUpThrough = undefined;
}

/** Reads the lowest pending events into the queue and notes whether that was all of them. */
export async function readPending(store: OutboxStore, worker: Worker): Promise<void> {
  worker.isReading = true;
  worker.wasNotifiedWhileReading = false;
  let events: OutboxEvent[];
  try {
    events = await store.pending(worker.endpoint.name, READ_AHEAD);
  } finally {
    worker.isReading = false;
  }
  worker.queue = events;
  const last = events.at(-1)?.sequence;
  if (last !== undefined) worker.lastSeen = Math.max(worker.lastSeen ?? last, last);
  // Fewer than asked for: nothing else was pending. Empty: nothing pending above what this worker saw. A
  // commit announced while the read was in flight may be missing from it: then read again.
  const isComplete = events.length < READ_AHEAD && !worker.wasNotifiedWhileReading;
  worker.caughtUpThrough = isComplete ? (last ?? worker.lastSeen) : undefined;
}

/** Takes events this process committed into the queue when they follow it without a hole; else reads. */
export function acceptCommitted(worker: Worker, committed: readonly OutboxEvent[]): void {
  if (worker.isReading) {
    worker.wasNotifiedWhileReading = true;
    return;
  }
  const through = worker.caughtUpThrough;
  // Events the worker already has (its read came after their commit) are skipped, not a reason to read.
  const events = committed.filter(
    (event) => event.endpoint === worker.endpoint.name && !(through !== undefined && event.sequence <= through),
  );
  if (events.length === 0) return;
  const isNext =
    through !== undefined &&
    !worker.mustReread &&
    worker.leaseValidUntil > Date.now() &&
    events.every((event, index) => event.sequence === through + 1 + index);
  if (!isNext) {
    worker.caughtUpThrough = undefined;
    return;
  }
  worker.queue.push(...events);
  worker.caughtUpThrough = events.at(-1)!.sequence;
  worker.lastSeen = Math.max(worker.lastSeen ?? 0, worker.caughtUpThrough);
}

/**
 * A wake: `committed` events join the queue when they follow it; a wake that names no events (a replay, a
 * re-enabled endpoint, a commit this process cannot see) makes the worker read the store.
 */
export function notifyWorker(worker: Worker, notification: { reread?: boolean; committed?: readonly OutboxEvent[] } | undefined): void {
  if (notification?.reread) worker.mustReread = true;
  if (notification?.committed && notification.committed.length > 0) acceptCommitted(worker, notification.committed);
  else {
    worker.caughtUpThrough = undefined;
    if (worker.isReading) worker.wasNotifiedWhileReading = true;
  }
  worker.wake?.();
}
