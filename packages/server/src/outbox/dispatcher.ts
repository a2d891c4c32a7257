import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { WEBHOOK_RETRY_DEFAULTS, type WebhookExhaustedAction } from '@gateway/core';
import { exchange, isExchangeTimeout } from '@gateway/runtime';
import { CLOUDEVENTS_CONTENT_TYPE } from './event.js';
import { signatureHeaders } from './signature.js';
import type { Delivery, OutboxEvent, OutboxStore } from './store.js';
import type { DeliveryTelemetry } from './delivery-telemetry.js';
import { backgroundTurn } from '../scheduling/background-lane.js';

export interface RetrySettings {
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
  timeoutMs: number;
}

export interface DispatcherEndpoint {
  name: string;
  url: string;
  retry?: Partial<RetrySettings>;
  /**
   * When an event's attempts run out: `pause` (the default) stops the endpoint at it, in every process, until
   * it is resumed; `skip` marks it `failed` and goes on with the next.
   */
  onExhausted?: WebhookExhaustedAction;
  /** The signing secrets, current first; two during a rotation. Read per attempt (rotation without restart). */
  secrets(): Promise<readonly string[]> | readonly string[];
}

export interface DispatcherLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

export interface CreateDispatcherOptions {
  store: OutboxStore;
  endpoints: readonly DispatcherEndpoint[];
  /** The HTTP dispatcher: the SSRF-guarded agent in the gateway. */
  agent: Dispatcher;
  /** This process's lease holder id (default: a random UUID). */
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
}

export interface AttemptResult {
  status: number | null;
  error: string | null;
  retryAfterMs: number | undefined;
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
/** How many pending events a worker reads in one query (it still sends them one at a time, in order). */
export const READ_AHEAD = 100;

export function retrySettings(retry: Partial<RetrySettings> | undefined): RetrySettings {
  return { ...WEBHOOK_RETRY_DEFAULTS, ...retry };
}

/**
 * `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date; undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The wait before attempt `failedAttempts + 1`: the receiver's Retry-After when it gave one, else exponential
 * backoff with full jitter (uniform in [0, min(cap, initial × 2^(failedAttempts − 1))]); both capped.
 */
export function retryDelayMs(
  settings: RetrySettings,
  failedAttempts: number,
  retryAfterMs: number | undefined,
  random: () => number,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, settings.maxDelayMs);
  const ceiling = Math.min(settings.maxDelayMs, settings.initialDelayMs * 2 ** Math.max(0, failedAttempts - 1));
  return Math.floor(random() * ceiling);
}

interface Worker {
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

const endpointUrls = new WeakMap<DispatcherEndpoint, URL>();
/** The endpoint's URL, parsed once. */
function endpointUrl(endpoint: DispatcherEndpoint): URL {
  let url = endpointUrls.get(endpoint);
  if (!url) {
    url = new URL(endpoint.url);
    endpointUrls.set(endpoint, url);
  }
  return url;
}

/**
 * Delivers the outbox, one worker per endpoint, strictly in sequence order: the worker holds the endpoint's
 * lease, takes the lowest pending event, and does not look at the next one until this one is acknowledged
 * (any 2xx). When its attempts run out the endpoint pauses at it (the lease is given up and no process takes
 * it again until a resume), or, with `onExhausted: skip`, the event is given up (`failed`) and the next one
 * goes. `410 Gone` disables the endpoint (Standard Webhooks); its events stay pending until a replay or a
 * resume re-enables it.
 */
export function createDispatcher(options: CreateDispatcherOptions): WebhookDispatcher {
  const store = options.store;
  const holder = options.holder ?? randomUUID();
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const random = options.random ?? Math.random;
  const stopController = new AbortController();
  const workers = new Map<string, Worker>(
    options.endpoints.map((endpoint) => [
      endpoint.name,
      {
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
      },
    ]),
  );
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

  const attempt = async (
    endpoint: DispatcherEndpoint,
    settings: RetrySettings,
    eventId: string,
    body: string,
    extraHeaders?: Readonly<Record<string, string>>,
  ): Promise<AttemptResult> => {
    try {
      const secrets = await endpoint.secrets();
      const headers = {
        'content-type': CLOUDEVENTS_CONTENT_TYPE,
        'user-agent': 'gateway-webhooks',
        ...extraHeaders,
        ...signatureHeaders(secrets, eventId, new Date(), body),
      };
      // The receiver's answer body is not used: at most 64 KiB of it is read, the rest dropped.
      const response = await exchange({
        dispatcher: options.agent,
        url: endpointUrl(endpoint),
        method: 'POST',
        headers,
        body,
        timeoutMs: settings.timeoutMs,
        maxBodyBytes: 65_536,
        overLimit: 'ignore',
        // stop() cuts the attempt in flight (it stays pending, not counted); the timeout is the exchange's timer.
        signal: stopController.signal,
      });
      const isAcknowledged = response.statusCode >= 200 && response.statusCode < 300;
      return {
        status: response.statusCode,
        error: isAcknowledged ? null : `HTTP ${response.statusCode}`,
        retryAfterMs: parseRetryAfter(response.headers['retry-after'], Date.now()),
      };
    } catch (error) {
      const typed = error as Error & { code?: string };
      const reason = isExchangeTimeout(error)
        ? `timed out after ${settings.timeoutMs} ms`
        : (typed.code ? `${typed.code}: ` : '') + typed.message;
      return { status: null, error: reason, retryAfterMs: undefined };
    }
  };

  /** Forgets what was read ahead (after a failure, a lost lease, a replay). */
  const reread = (worker: Worker): void => {
    worker.queue = [];
    worker.mustReread = false;
    worker.caughtUpThrough = undefined;
  };

  /** Reads the lowest pending events into the queue and notes whether that was all of them. */
  const readPending = async (worker: Worker): Promise<void> => {
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
  };

  /** Takes events this process committed into the queue when they follow it without a hole; else reads. */
  const accept = (worker: Worker, committed: readonly OutboxEvent[]): void => {
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
  };

  const deliver = async (worker: Worker, event: OutboxEvent): Promise<void> => {
    const { endpoint, settings } = worker;
    const observed = options.telemetry?.attemptStarted(endpoint.name, event);
    const result = await attempt(endpoint, settings, event.eventId, event.body, observed?.headers);
    observed?.end(result);
    // Cut short by shutdown: stays pending, not counted. An answer that did arrive is still recorded, so an
    // acknowledged event is not sent again after a clean restart.
    if (result.status === null && stopController.signal.aborted) return;
    if (result.status !== null && result.status >= 200 && result.status < 300) {
      worker.queue.shift();
      // Marked before the next event is sent, one commit per event: after a crash only the event in flight is
      // sent again, so a receiver never sees the sequence go back. Marking in batches gained nothing
      // (docs/performance.md, "Webhook deliveries marked one commit per event") and would resend a whole
      // batch after a crash. The mark (and the next event's send) waits for its turn in
      // the background lane, behind calls that are ready to run (scheduling/background-lane.ts).
      await backgroundTurn();
      const delivery: Delivery = { sequence: event.sequence, status: result.status, at: new Date().toISOString() };
      if ((await store.markDelivered(endpoint.name, holder, [delivery])) === 0) {
        // Not ours any more (the lease lapsed and another process took it, or a replay changed the row): stop
        // sending from the list read ahead, and check the lease again before anything else.
        reread(worker);
        worker.leaseValidUntil = 0;
      }
      return;
    }
    // Anything else changes the event's row: read again after it.
    reread(worker);
    if (result.status === 410) {
      // Standard Webhooks: 410 Gone means "stop sending". Keep the events (nothing lost); replay re-enables.
      await store.disable(endpoint.name, `${endpoint.url} answered 410 Gone to ${event.eventId}`);
      await store.releaseLease(endpoint.name, holder);
      worker.leaseValidUntil = 0;
      options.logger?.warn({ endpoint: endpoint.name, eventId: event.eventId }, 'webhook endpoint answered 410 Gone: disabled');
      return;
    }
    const failedAttempts = event.attempts + 1;
    const isExhausted = failedAttempts >= settings.attempts;
    if (isExhausted && (endpoint.onExhausted ?? 'pause') === 'pause') {
      // Nothing is given up: the endpoint stops here, in every process (the pause is in the database).
      const reason = `${event.eventId} (sequence ${event.sequence}) failed ${failedAttempts} attempts: ${result.error ?? 'failed'}`;
      await store.pause(endpoint.name, event.sequence, holder, { status: result.status, error: result.error ?? 'failed', reason });
      worker.leaseValidUntil = 0;
      options.logger?.warn(
        { endpoint: endpoint.name, eventId: event.eventId, sequence: event.sequence, attempts: failedAttempts, error: result.error },
        'webhook endpoint paused: attempts exhausted; later events wait for `gateway webhooks resume`',
      );
      return;
    }
    const isGivenUp = isExhausted;
    const nextAttemptAt = isGivenUp ? null : Date.now() + retryDelayMs(settings, failedAttempts, result.retryAfterMs, random);
    await store.markAttemptFailed(endpoint.name, event.sequence, holder, {
      status: result.status,
      error: result.error ?? 'failed',
      nextAttemptAt,
    });
    if (isGivenUp) {
      options.logger?.warn(
        { endpoint: endpoint.name, eventId: event.eventId, sequence: event.sequence, attempts: failedAttempts, error: result.error },
        'webhook event failed: attempts exhausted, moving on',
      );
    }
  };

  const run = async (worker: Worker): Promise<void> => {
    const name = worker.endpoint.name;
    while (!stopController.signal.aborted) {
      try {
        const now = Date.now();
        // Renew at half-life so the lease never lapses during an attempt (timeouts are shorter than leases).
        if (worker.leaseValidUntil - now < leaseMs / 2) {
          if (!(await store.acquireLease(name, holder, now, leaseMs))) {
            worker.leaseValidUntil = 0;
            // Another process delivers now: what this one read ahead may be stale.
            reread(worker);
            await sleep(worker, pollIntervalMs);
            continue;
          }
          worker.leaseValidUntil = now + leaseMs;
        }
        if (worker.mustReread) reread(worker);
        if (worker.queue.length === 0 && worker.caughtUpThrough === undefined) await readPending(worker);
        const event = worker.queue[0];
        if (!event) {
          // Another process's events arrive without a notification: read again after a quiet interval.
          if (!(await sleep(worker, pollIntervalMs))) worker.caughtUpThrough = undefined;
          continue;
        }
        const wait = event.nextAttemptAt - Date.now();
        if (wait > 0) {
          await sleep(worker, Math.min(wait, leaseMs / 2));
          continue;
        }
        await deliver(worker, event);
      } catch (error) {
        options.logger?.warn({ endpoint: name, error: (error as Error).message }, 'webhook worker error; retrying');
        reread(worker);
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
      for (const worker of workers.values()) await Promise.resolve(store.releaseLease(worker.endpoint.name, holder)).catch(() => undefined);
    },
    notify(notification) {
      for (const worker of workers.values()) {
        if (notification?.reread) worker.mustReread = true;
        if (notification?.committed && notification.committed.length > 0) accept(worker, notification.committed);
        // A wake that names no events (a replay, a re-enabled endpoint, a commit this process cannot see):
        // the worker reads the store.
        else {
          worker.caughtUpThrough = undefined;
          if (worker.isReading) worker.wasNotifiedWhileReading = true;
        }
        worker.wake?.();
      }
    },
    async sendOnce(endpoint, eventId, body) {
      const worker = workers.get(endpoint);
      if (!worker) return { status: null, error: `no webhook endpoint '${endpoint}'`, retryAfterMs: undefined };
      return attempt(worker.endpoint, worker.settings, eventId, body);
    },
  };
}
