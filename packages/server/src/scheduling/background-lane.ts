/**
 * The background lane: the work that follows a call's answer — moving its receipt into the database, handing
 * its events to the webhook dispatcher, recording their acknowledgements, its log line — runs here, one task
 * per turn of the event loop, so a request that arrives meanwhile is read and served between two tasks
 * instead of after all of them.
 *
 * Why: in one turn of its loop, Node runs every `setImmediate` callback queued before the turn's check phase,
 * and polls for I/O only after them. With each of those steps queued that way, a client that sends its next
 * call as soon as it has the answer (an agent calling tools back to back) found the gateway busy with the
 * previous call's receipt, event and log line (figures: docs/performance.md, "The background lane"; design:
 * docs/server.md#the-background-lane).
 *
 * Tasks run in the order they were queued. While more than `MAX_WAITING` wait (a sustained load queues work
 * faster than one task per turn), a turn runs as many as it takes to come back to that bound, so the lane keeps
 * up and what waits stays bounded. A task must not throw: if one does, the tasks behind it still run, on the
 * next turn, and the error goes on as an uncaught exception, as from any `setImmediate` callback.
 *
 * One lane per event loop (module state): every gateway in a process shares its thread, so they share it.
 */

/** Tasks that may wait before a turn runs more than one of them. */
export const MAX_WAITING = 64;

const queue: Array<() => void> = [];
let isScheduled = false;

function schedule(): void {
  if (isScheduled) return;
  isScheduled = true;
  setImmediate(runTurn);
}

/** Tasks that must run alone in their turn: first in it (no other task's microtasks pending) and last. */
const aloneTasks = new WeakSet<() => void>();

function runTurn(): void {
  isScheduled = false;
  try {
    let isFirst = true;
    do {
      if (!isFirst && aloneTasks.has(queue[0]!)) break;
      const task = queue.shift()!;
      task();
      if (aloneTasks.has(task)) break;
      isFirst = false;
    } while (queue.length > MAX_WAITING);
  } finally {
    if (queue.length > 0) schedule();
  }
}

/** Runs `task` on a later turn of the event loop, after the tasks queued before it, one task per turn. */
export function runInBackground(task: () => void): void {
  queue.push(task);
  schedule();
}

/**
 * Like runInBackground, but `task` runs alone in its turn: nothing else of the lane before it in the same
 * callback (whose microtasks would still be pending) nor after it (which would run before its microtasks). A
 * SQLite unit of work begins in such a task (store/sqlite/unit-of-work.ts).
 */
export function runAloneInBackground(task: () => void): void {
  aloneTasks.add(task);
  runInBackground(task);
}

/** Resolves on a later turn, in the lane's order: for a loop that continues in the background (webhook delivery). */
export function backgroundTurn(): Promise<void> {
  return new Promise((resolve) => runInBackground(resolve));
}
