import type { Dispatcher } from 'undici';
import { backgroundTurn } from '../scheduling/background-lane.js';
import { sendAttempt, type AttemptResult } from './attempt.js';
import type { DeliveryTelemetry } from './delivery-telemetry.js';
import type { Delivery, OutboxEvent, OutboxStore } from './ports.js';
import { retryDelayMs } from './retry.js';
import { forgetReadAhead, type Worker } from './worker.js';

export interface DispatcherLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

/** What delivering one event needs from the dispatcher that runs it. */
export interface DeliveryContext {
  store: OutboxStore;
  agent: Dispatcher;
  /** This process's lease holder id: every mark names it. */
  holder: string;
  /** Aborted by stop(): cuts the attempt in flight. */
  signal: AbortSignal;
  random: () => number;
  logger: DispatcherLogger | undefined;
  /** Metrics and traces of the ordered delivery attempts (telemetry/). */
  telemetry: DeliveryTelemetry | undefined;
  /** Told after an endpoint paused here. */
  onPaused?: ((endpoint: string) => void) | undefined;
}

const isAcknowledgement = (status: number | null): status is number => status !== null && status >= 200 && status < 300;

/**
 * Sends the worker's head event once and records what came of it: an acknowledgement (the event leaves the
 * queue), 410 Gone (the endpoint is disabled), attempts run out (the endpoint pauses at it, or with
 * `onExhausted: skip` it is given up), or a retry later.
 */
export async function deliverEvent(context: DeliveryContext, worker: Worker, event: OutboxEvent): Promise<void> {
  const observed = context.telemetry?.attemptStarted(worker.endpoint.name, event);
  const result = await sendAttempt(context.agent, worker.endpoint, worker.settings, event, context.signal, observed?.headers);
  observed?.end(result);
  // Cut short by shutdown: stays pending, not counted. An answer that did arrive is still recorded, so an
  // acknowledged event is not sent again after a clean restart.
  if (result.status === null && context.signal.aborted) return;
  if (isAcknowledgement(result.status)) return recordAcknowledgement(context, worker, event, result.status);
  // Anything else changes the event's row: read again after it.
  forgetReadAhead(worker);
  if (result.status === 410) return disableGone(context, worker, event);
  return recordFailure(context, worker, event, result);
}

async function recordAcknowledgement(context: DeliveryContext, worker: Worker, event: OutboxEvent, status: number): Promise<void> {
  worker.queue.shift();
  // Marked before the next event is sent, one commit per event: after a crash only the event in flight is
  // sent again, so a receiver never sees the sequence go back. Marking in batches gained nothing
  // (docs/performance.md, "Webhook deliveries marked one commit per event") and would resend a whole
  // batch after a crash. The mark (and the next event's send) waits for its turn in
  // the background lane, behind calls that are ready to run (scheduling/background-lane.ts).
  await backgroundTurn();
  const delivery: Delivery = { sequence: event.sequence, status, at: new Date().toISOString() };
  if ((await context.store.markDelivered(worker.endpoint.name, context.holder, [delivery])) === 0) {
    // Not ours any more (the lease lapsed and another process took it, or a replay changed the row): stop
    // sending from the list read ahead, and check the lease again before anything else.
    forgetReadAhead(worker);
    worker.leaseValidUntil = 0;
  }
}

/** Standard Webhooks: 410 Gone means "stop sending". Keep the events (nothing lost); replay re-enables. */
async function disableGone(context: DeliveryContext, worker: Worker, event: OutboxEvent): Promise<void> {
  const { endpoint } = worker;
  await context.store.disable(endpoint.name, `${endpoint.url} answered 410 Gone to ${event.eventId}`);
  await context.store.releaseLease(endpoint.name, context.holder);
  worker.leaseValidUntil = 0;
  context.logger?.warn({ endpoint: endpoint.name, eventId: event.eventId }, 'webhook endpoint answered 410 Gone: disabled');
}

async function recordFailure(context: DeliveryContext, worker: Worker, event: OutboxEvent, result: AttemptResult): Promise<void> {
  const { endpoint, settings } = worker;
  const failedAttempts = event.attempts + 1;
  const isExhausted = failedAttempts >= settings.attempts;
  const error = result.error ?? 'failed';
  const details = {
    endpoint: endpoint.name,
    eventId: event.eventId,
    sequence: event.sequence,
    attempts: failedAttempts,
    error: result.error,
  };
  if (isExhausted && (endpoint.onExhausted ?? 'pause') === 'pause') {
    // Nothing is given up: the endpoint stops here, in every process (the pause is in the database).
    const reason = `${event.eventId} (sequence ${event.sequence}) failed ${failedAttempts} attempts: ${error}`;
    await context.store.pause(endpoint.name, event.sequence, context.holder, { status: result.status, error, reason });
    worker.leaseValidUntil = 0;
    context.onPaused?.(endpoint.name);
    context.logger?.warn(details, 'webhook endpoint paused: attempts exhausted; later events wait for `gateway webhooks resume`');
    return;
  }
  const nextAttemptAt = isExhausted ? null : Date.now() + retryDelayMs(settings, failedAttempts, result.retryAfterMs, context.random);
  await context.store.markAttemptFailed(endpoint.name, event.sequence, context.holder, { status: result.status, error, nextAttemptAt });
  if (isExhausted) context.logger?.warn(details, 'webhook event failed: attempts exhausted, moving on');
}
