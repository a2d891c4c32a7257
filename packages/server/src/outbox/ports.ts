import type { Transaction } from '../store/unit-of-work.js';

/**
 * The outbox area's storage port: the events waiting for each webhook endpoint, their delivery marks, and each
 * endpoint's sequence, lease and pause. Every method is awaitable; an adapter implements it (SQLite in
 * ./sqlite/, PostgreSQL in ./postgres/) and passes the suites in ./contract/. A step that must be
 * atomic (a pause with the attempt that caused it, a replay, a resume) is ONE method, so an adapter runs it in
 * one transaction.
 */

export type OutboxStatus = 'pending' | 'delivered' | 'failed';

/** One event for one endpoint, as the outbox holds it. */
export interface OutboxEvent {
  endpoint: string;
  sequence: number;
  eventId: string;
  receiptId: string | null;
  /** The exact CloudEvents JSON sent on every attempt. */
  body: string;
  status: OutboxStatus;
  attempts: number;
  /** Epoch ms before which the next attempt must not start. */
  nextAttemptAt: number;
  lastAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

export interface EndpointState {
  name: string;
  nextSequence: number;
  disabledAt: string | null;
  disabledReason: string | null;
  /** Set while delivery is paused at `pausedSequence` (its attempts ran out; `resume` clears it). */
  pausedAt: string | null;
  pausedReason: string | null;
  pausedSequence: number | null;
  leaseHolder: string | null;
  leaseExpiresAt: number | null;
  counts: Record<OutboxStatus, number>;
}

export interface NewOutboxEvent {
  eventId: string;
  receiptId: string | null;
  body: string;
}

/** One acknowledged attempt: the event's sequence, the 2xx status, and when (ISO). */
export interface Delivery {
  sequence: number;
  status: number;
  at: string;
}

/** What `resume` found: where the endpoint was paused (null when it was not) and whether it was disabled. */
export interface ResumedEndpoint {
  pausedSequence: number | null;
  wasPaused: boolean;
  wasDisabled: boolean;
}

/** Which events a replay puts back: every failed one, or every one from a sequence on. */
export type ReplaySelection = { failed: true } | { fromSequence: number };

/**
 * The outbox's storage, for one or several gateway processes sharing one database:
 * - `append` runs inside the unit of work that stores the receipt (or checkpoint) the event reports, which
 *   serialises appends per endpoint (SQLite: the write lock, and the endpoint's highest stored sequence + 1;
 *   PostgreSQL: the endpoint's counter incremented, whose row lock holds until the unit of work ends): sequences
 *   are gap-free and in commit order per endpoint, and a rolled-back unit of work takes its events and their
 *   sequences with it;
 * - `acquireLease` is one conditional write (holder + expiry): at most one dispatcher per endpoint at a time,
 *   which is what keeps delivery strictly in order across processes;
 * - the `mark*` writes and `pause` name the lease holder, so a dispatcher that lost its lease cannot overwrite a
 *   row.
 */
export interface OutboxStore {
  /** Makes sure each configured endpoint has its row (sequence counter, lease). */
  ensureEndpoints(names: readonly string[]): Promise<void>;
  /**
   * Takes the endpoint's next sequence and stores the event `build` makes for it, in `tx` (the unit of work of
   * the receipt or checkpoint it reports). Rejects a transaction another adapter opened, and an endpoint without
   * its row. `tx` undefined: the adapter's current transaction on its connection, for callers that do not pass
   * their unit of work's transaction yet; only an adapter with one connection per process (SQLite) has one.
   */
  append(tx: Transaction | undefined, endpoint: string, build: (sequence: number) => NewOutboxEvent): Promise<OutboxEvent>;
  /**
   * Takes or renews the endpoint's lease for `holder` until `now + ttlMs`; false while another holds it or
   * while the endpoint is disabled (410 Gone) or paused, so such an endpoint has no deliverer in any process.
   */
  acquireLease(endpoint: string, holder: string, now: number, ttlMs: number): Promise<boolean>;
  releaseLease(endpoint: string, holder: string): Promise<void>;
  /** The endpoint's pending events, lowest sequence first, at most `limit` (the dispatcher reads ahead). */
  pending(endpoint: string, limit: number): Promise<OutboxEvent[]>;
  /**
   * Records acknowledgements (an acknowledged event is delivered), each once and only while `holder` holds the
   * endpoint's lease, in one transaction; resolves how many were recorded. (The dispatcher records one event at
   * a time, before sending the next: see delivery.ts.)
   */
  markDelivered(endpoint: string, holder: string, deliveries: readonly Delivery[]): Promise<number>;
  /** Records a failed attempt: `nextAttemptAt` to retry, or null to give the event up (`failed`). */
  markAttemptFailed(
    endpoint: string,
    sequence: number,
    holder: string,
    outcome: { status: number | null; error: string; nextAttemptAt: number | null },
  ): Promise<void>;
  /**
   * Records the failed attempt that exhausted an event's attempts and pauses the endpoint at it, in one
   * transaction, only while `holder` holds the lease (which it gives up): the event stays pending, later events
   * wait. False when the lease was no longer `holder`'s (nothing written).
   */
  pause(
    endpoint: string,
    sequence: number,
    holder: string,
    outcome: { status: number | null; error: string; reason: string },
  ): Promise<boolean>;
  /**
   * Ends a pause (and a 410 Gone disable): the event it stopped at gets a fresh cycle of attempts, and delivery
   * goes on from it.
   */
  resume(endpoint: string): Promise<ResumedEndpoint>;
  disable(endpoint: string, reason: string): Promise<void>;
  /** Puts events back to pending (attempts reset) and re-enables (and resumes) the endpoint; resolves how many. */
  replay(endpoint: string, selection: ReplaySelection): Promise<number>;
  endpoint(name: string): Promise<EndpointState | undefined>;
  /** The endpoint's events from `fromSequence` on (default all), lowest first, optionally of one status. */
  events(endpoint: string, options: { fromSequence?: number; status?: OutboxStatus; limit: number }): Promise<OutboxEvent[]>;
}
