import type { Dispatcher } from 'undici';
import { sendAttempt, type AttemptResult, type DispatcherEndpoint } from './attempt.js';
import { deliverEvent, type DeliveryContext, type DispatcherLogger } from './delivery.js';
import type { DeliveryTelemetry } from './delivery-telemetry.js';
import type { OutboxEvent, OutboxStore } from './ports.js';
import { createWorker, forgetReadAhead, notifyWorker, readPending, type Worker } from './worker.js';
import { processHolder } from '../store/lease-keeper.js';

export type { AttemptResult, DispatcherEndpoint } from './attempt.js';
export type { DispatcherLogger } from './delivery.js';
export { parseRetryAfter, retryDelayMs, retrySettings, type RetrySettings } from './retry.js';
export { READ_AHEAD } from './worker.js';

export interface CreateDispatcherOptions {
  store: OutboxStore;
  endpoints: readonly DispatcherEndpoint[];
  /** The HTTP dispatcher: the SSRF-guarded agent in the gateway. */
  agent: Dispatcher;
  /** This process's lease holder id (default: host/pid/random, as every lease names its holder: processHolder()). */
  holder?: string;
  /** How long a lease lasts; renewed at half. Another process takes over this long after a crash. */
  leaseMs?: number;
  /** How often an idle worker looks for events appended by another process, or a lease it can take. */
  pollIntervalMs?: number;
  logger?: DispatcherLogger;
  /** Source of randomness for the jitter, in [0, 1). */
  random?: () => number;
  /** Metrics and traces of the ordered delivery attempts (telemetry/). */
  telemetry?: DeliveryTelemetry;
  /** An endpoint paused here (its attempts ran out): the webhooks area announces it to the other processes. */
  onPaused?: (endpoint: string) => void;
}

export interface WebhookDispatcher {
  start(): void;
  /** Stops every worker (an attempt in flight is abandoned and stays pending) and releases the leases. */
  stop(): Promise<void>;
  /**
   * Wakes the workers: new events, a replay, a re-enabled endpoint. `reread` (a replay) makes them drop the
   * events they read ahead, so replayed events with lower sequences go out next. `committed`: events this
   * process just committed; a worker that has every earlier pending event in hand takes them as they are
   * instead of reading them back from the store (anything else makes it read).
   */
  notify(options?: { reread?: boolean; committed?: readonly OutboxEvent[] }): void;
  /** Sends one signed event outside the ordered stream (`gateway webhooks test`). */
  sendOnce(endpoint: string, eventId: string, body: string): Promise<AttemptResult>;
}

export const DEFAULT_LEASE_MS = 15_000;
export const DEFAULT_POLL_INTERVAL_MS = 1_000;

/**
 * Delivers the outbox, one worker per endpoint, strictly in sequence order: the worker holds the endpoint's
 * lease, takes the lowest pending event, and does not look at the next one until this one is acknowledged
 * (any 2xx). When its attempts run out the endpoint pauses at it (the lease is given up and no process takes
 * it again until a resume), or, with `onExhausted: skip`, the event is given up (`failed`) and the next one
 * goes. `410 Gone` disables the endpoint (Standard Webhooks); its events stay pending until a replay or a
 * resume re-enables it. (Reading ahead: worker.ts; one attempt and what it records: attempt.ts, delivery.ts.)
 */
export function createDispatcher(options: CreateDispatcherOptions): WebhookDispatcher {
  const store = options.store;
  const holder = options.holder ?? processHolder();
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const stopController = new AbortController();
  const context: DeliveryContext = {
    store,
    agent: options.agent,
    holder,
    signal: stopController.signal,
    random: options.random ?? Math.random,
    logger: options.logger,
    telemetry: options.telemetry,
    onPaused: options.onPaused,
  };
  const workers = new Map<string, Worker>(options.endpoints.map((endpoint) => [endpoint.name, createWorker(endpoint)]));
  let isStarted = false;

  /** Resolves true when woken (notify, stop), false when the time ran out. */
  const sleep = (worker: Worker, ms: number): Promise<boolean> =>
    new Promise((resolve) => {
      if (stopController.signal.aborted) return resolve(true);
      const timer = setTimeout(() => done(false), Math.max(0, ms));
      function done(isWoken: boolean) {
        clearTimeout(timer);
        worker.wake = undefined;
        resolve(isWoken);
      }
      worker.wake = () => done(true);
    });

  /** Holds the lease, renewed at half-life so it never lapses during an attempt (timeouts are shorter). */
  const holdLease = async (worker: Worker): Promise<boolean> => {
    const now = Date.now();
    if (worker.leaseValidUntil - now >= leaseMs / 2) return true;
    if (await store.acquireLease(worker.endpoint.name, holder, now, leaseMs)) {
      worker.leaseValidUntil = now + leaseMs;
      return true;
    }
    worker.leaseValidUntil = 0;
    // Another process delivers now: what this one read ahead may be stale.
    forgetReadAhead(worker);
    return false;
  };

  /** One turn of a worker: the lease, then the head event (read ahead when needed), sent when it is due. */
  const turn = async (worker: Worker): Promise<void> => {
    if (!(await holdLease(worker))) {
      await sleep(worker, pollIntervalMs);
      return;
    }
    if (worker.mustReread) forgetReadAhead(worker);
    if (worker.queue.length === 0 && worker.caughtUpThrough === undefined) await readPending(store, worker);
    const event = worker.queue[0];
    if (!event) {
      // Another process's events arrive without a notification: read again after a quiet interval.
      if (!(await sleep(worker, pollIntervalMs))) worker.caughtUpThrough = undefined;
      return;
    }
    const wait = event.nextAttemptAt - Date.now();
    if (wait > 0) {
      await sleep(worker, Math.min(wait, leaseMs / 2));
      return;
    }
    await deliverEvent(context, worker, event);
  };

  const run = async (worker: Worker): Promise<void> => {
    while (!stopController.signal.aborted) {
      try {
        await turn(worker);
      } catch (error) {
        options.logger?.warn({ endpoint: worker.endpoint.name, error: (error as Error).message }, 'webhook worker error; retrying');
        forgetReadAhead(worker);
        await sleep(worker, pollIntervalMs);
      }
    }
  };

  return {
    start() {
      if (isStarted) return;
      isStarted = true;
      for (const worker of workers.values()) worker.running = run(worker);
    },
    async stop() {
      stopController.abort();
      for (const worker of workers.values()) worker.wake?.();
      await Promise.all([...workers.values()].map((worker) => worker.running));
      for (const worker of workers.values()) await store.releaseLease(worker.endpoint.name, holder).catch(() => undefined);
    },
    notify(notification) {
      for (const worker of workers.values()) notifyWorker(worker, notification);
    },
    async sendOnce(endpoint, eventId, body) {
      const worker = workers.get(endpoint);
      if (!worker) return { status: null, error: `no webhook endpoint '${endpoint}'`, retryAfterMs: undefined };
      return sendAttempt(options.agent, worker.endpoint, worker.settings, { eventId, body }, stopController.signal);
    },
  };
}
