import { writeTransaction, type SqliteDatabase } from '../store/sqlite/database.js';

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

type Awaitable<T> = T | Promise<T>;

/**
 * What the outbox needs from a database. SQLite implements it synchronously; a PostgreSQL store implements
 * the same contract with several gateway processes sharing one database:
 * - `append` runs inside the receipt's transaction, which serialises appends (SQLite: the write lock;
 *   PostgreSQL: `SELECT … FROM webhook_endpoints WHERE name = $1 FOR UPDATE` row-locks the endpoint), and
 *   takes the endpoint's highest stored sequence + 1, so sequences are gap-free and in commit order per
 *   endpoint. Nothing else is written per event at append: `next_sequence` only holds the first sequence (a floor);
 * - `acquireLease` is one conditional UPDATE (holder + expiry): at most one dispatcher per endpoint at a
 *   time, which is what keeps delivery strictly in order across processes;
 * - the `mark*` writes name the lease holder, so a dispatcher that lost its lease cannot overwrite a row.
 */
export interface OutboxStore {
  /** Makes sure each configured endpoint has its row (sequence counter, lease). */
  ensureEndpoints(names: readonly string[]): Awaitable<void>;
  /** Takes the endpoint's next sequence and stores the event built for it; synchronous for the receipt hook. */
  append(endpoint: string, build: (sequence: number) => NewOutboxEvent): OutboxEvent;
  /**
   * Takes or renews the endpoint's lease for `holder` until `now + ttlMs`; false while another holds it or
   * while the endpoint is disabled (410 Gone) or paused, so such an endpoint has no deliverer in any process.
   */
  acquireLease(endpoint: string, holder: string, now: number, ttlMs: number): Awaitable<boolean>;
  releaseLease(endpoint: string, holder: string): Awaitable<void>;
  /** The endpoint's pending events, lowest sequence first, at most `limit` (the dispatcher reads ahead). */
  pending(endpoint: string, limit: number): Awaitable<OutboxEvent[]>;
  /**
   * Records acknowledgements (an acknowledged event is delivered), each once and only while `holder` holds the
   * endpoint's lease, in one transaction; returns how many were recorded. (The dispatcher records one event at
   * a time, before sending the next: see dispatcher.ts.)
   */
  markDelivered(endpoint: string, holder: string, deliveries: readonly Delivery[]): Awaitable<number>;
  /** Records a failed attempt: `nextAttemptAt` to retry, or null to give the event up (`failed`). */
  markAttemptFailed(
    endpoint: string,
    sequence: number,
    holder: string,
    outcome: { status: number | null; error: string; nextAttemptAt: number | null },
  ): Awaitable<void>;
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
  ): Awaitable<boolean>;
  /**
   * Ends a pause (and a 410 Gone disable): the event it stopped at gets a fresh cycle of attempts, and delivery
   * goes on from it. Returns where it was paused (null when it was not) and whether it was disabled.
   */
  resume(endpoint: string): Awaitable<{ pausedSequence: number | null; wasPaused: boolean; wasDisabled: boolean }>;
  disable(endpoint: string, reason: string): Awaitable<void>;
  /** Puts events back to pending (attempts reset) and re-enables (and resumes) the endpoint; returns how many. */
  replay(endpoint: string, selection: { failed: true } | { fromSequence: number }): Awaitable<number>;
  endpoint(name: string): Awaitable<EndpointState | undefined>;
  events(endpoint: string, options: { fromSequence?: number; status?: OutboxStatus; limit: number }): Awaitable<OutboxEvent[]>;
}

/** One acknowledged attempt: the event's sequence, the 2xx status, and when (ISO). */
export interface Delivery {
  sequence: number;
  status: number;
  at: string;
}

interface EventRow {
  endpoint: string;
  sequence: number;
  event_id: string;
  receipt_id: string | null;
  body: string;
  status: OutboxStatus;
  attempts: number;
  next_attempt_at: number;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

function toEvent(row: EventRow): OutboxEvent {
  return {
    endpoint: row.endpoint,
    sequence: row.sequence,
    eventId: row.event_id,
    receiptId: row.receipt_id,
    body: row.body,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastAttemptAt: row.last_attempt_at,
    lastStatus: row.last_status,
    lastError: row.last_error,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
  };
}

/**
 * How often an acknowledgement moves `pending_from` (where the search for pending events starts) up to itself:
 * one small extra write per this many events, and a search that starts at most this many events back.
 */
const PENDING_FROM_STEP = 256;

/**
 * The outbox in the gateway's SQLite database (tables from `outboxMigrations`). An acknowledgement is a row of
 * `webhook_acks`; the event's own row (with its ~2 KB body) is written once at append and again only for a
 * failed attempt or a replay. So the receipt's commit writes the event row and its key, and an acknowledgement
 * commits one small page. (It used to rewrite the event's row and its entry in a pending index: with events
 * on, the gateway made 19 WAL writes per tool call, now 11; 3 without events. docs/webhooks.md#performance.)
 */
export class SqliteOutboxStore implements OutboxStore {
  private readonly statements;
  private readonly markDeliveredTransaction: (endpoint: string, holder: string, deliveries: readonly Delivery[]) => number;

  constructor(private readonly database: SqliteDatabase) {
    this.statements = {
      ensure: database.prepare('INSERT OR IGNORE INTO webhook_endpoints (name) VALUES (?)'),
      // The highest stored sequence + 1 (a seek on the primary key), never below the endpoint's floor; no row
      // when the endpoint has none. A read instead of an UPDATE: one page fewer in every receipt's commit.
      nextSequence: database
        .prepare(
          'SELECT max(coalesce((SELECT sequence FROM webhook_outbox WHERE endpoint = @name ORDER BY sequence DESC LIMIT 1) + 1, 0), ' +
            'next_sequence) FROM webhook_endpoints WHERE name = @name',
        )
        .pluck(),
      insert: database.prepare(`
        INSERT INTO webhook_outbox (endpoint, sequence, event_id, receipt_id, body, status, created_at)
        VALUES (?, ?, ?, ?, ?, 'pending', ?)`),
      lease: database.prepare(`
        UPDATE webhook_endpoints SET lease_holder = @holder, lease_expires_at = @expires
        WHERE name = @name AND disabled_at IS NULL AND paused_at IS NULL
          AND (lease_holder IS NULL OR lease_holder = @holder OR lease_expires_at <= @now)`),
      release: database.prepare(
        'UPDATE webhook_endpoints SET lease_holder = NULL, lease_expires_at = NULL WHERE name = ? AND lease_holder = ?',
      ),
      // Pending: from the endpoint's `pending_from` on (a range of the primary key), not failed, not acknowledged.
      pending: database.prepare(`
        SELECT o.* FROM webhook_outbox o
        WHERE o.endpoint = @endpoint AND o.status = 'pending'
          AND o.sequence >= (SELECT pending_from FROM webhook_endpoints WHERE name = @endpoint)
          AND NOT EXISTS (SELECT 1 FROM webhook_acks a WHERE a.endpoint = o.endpoint AND a.sequence = o.sequence)
        ORDER BY o.sequence LIMIT @limit`),
      // One acknowledgement, one small row (the event's own row is not even read): only while `holder` holds the
      // lease (a dispatcher only acknowledges what it sent while holding it), once per event (the key), in one
      // statement (no explicit transaction).
      acknowledge: database.prepare(`
        INSERT OR IGNORE INTO webhook_acks (endpoint, sequence, status, at)
        SELECT @endpoint, @sequence, @status, @at
        WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = @endpoint AND lease_holder = @holder)`),
      // Moves the start of the pending search up to @next when nothing below it is pending any more.
      raisePendingFrom: database.prepare(`
        UPDATE webhook_endpoints SET pending_from = @next
        WHERE name = @endpoint AND pending_from < @next
          AND NOT EXISTS (
            SELECT 1 FROM webhook_outbox o
            WHERE o.endpoint = @endpoint AND o.status = 'pending'
              AND o.sequence >= webhook_endpoints.pending_from AND o.sequence < @next
              AND NOT EXISTS (SELECT 1 FROM webhook_acks a WHERE a.endpoint = o.endpoint AND a.sequence = o.sequence))`),
      lowerPendingFrom: database.prepare(
        'UPDATE webhook_endpoints SET pending_from = min(pending_from, @from) WHERE name = @endpoint AND @from IS NOT NULL',
      ),
      attemptFailed: database.prepare(`
        UPDATE webhook_outbox SET attempts = attempts + 1, last_status = @status, last_error = @error,
          last_attempt_at = @at, next_attempt_at = COALESCE(@next, next_attempt_at),
          status = CASE WHEN @next IS NULL THEN 'failed' ELSE 'pending' END
        WHERE endpoint = @endpoint AND sequence = @sequence AND status = 'pending'
          AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = @endpoint AND lease_holder = @holder)`),
      // The exhausting attempt: counted and recorded like any failure, but the event stays pending.
      attemptExhausted: database.prepare(`
        UPDATE webhook_outbox SET attempts = attempts + 1, last_status = @status, last_error = @error, last_attempt_at = @at
        WHERE endpoint = @endpoint AND sequence = @sequence AND status = 'pending'
          AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = @endpoint AND lease_holder = @holder)`),
      pause: database.prepare(`
        UPDATE webhook_endpoints SET paused_at = @at, paused_reason = @reason, paused_sequence = @sequence,
          lease_holder = NULL, lease_expires_at = NULL
        WHERE name = @endpoint AND lease_holder = @holder`),
      pausedState: database.prepare('SELECT paused_at, paused_sequence, disabled_at FROM webhook_endpoints WHERE name = ?'),
      // A fresh attempt cycle for the event delivery stopped at (its earlier attempts stay in last_* only).
      freshCycle: database.prepare(`
        UPDATE webhook_outbox SET attempts = 0, next_attempt_at = 0
        WHERE endpoint = ? AND sequence = ? AND status = 'pending'`),
      disable: database.prepare('UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE name = ?'),
      enable: database.prepare(`
        UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, paused_at = NULL, paused_reason = NULL,
          paused_sequence = NULL
        WHERE name = ?`),
      firstFailed: database.prepare("SELECT min(sequence) FROM webhook_outbox WHERE endpoint = ? AND status = 'failed'").pluck(),
      forgetAcksFrom: database.prepare('DELETE FROM webhook_acks WHERE endpoint = ? AND sequence >= ?'),
      replayFailed: database.prepare(`
        UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_attempt_at = 0, delivered_at = NULL
        WHERE endpoint = ? AND status = 'failed'`),
      replayFrom: database.prepare(`
        UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_attempt_at = 0, delivered_at = NULL
        WHERE endpoint = ? AND sequence >= ?`),
      endpoint: database.prepare('SELECT * FROM webhook_endpoints WHERE name = ?'),
      // An event with an acknowledgement is delivered, whatever its row says (rows are not rewritten on delivery).
      counts: database.prepare(`
        SELECT CASE WHEN a.sequence IS NOT NULL THEN 'delivered' ELSE o.status END AS status, COUNT(*) AS count
        FROM webhook_outbox o LEFT JOIN webhook_acks a ON a.endpoint = o.endpoint AND a.sequence = o.sequence
        WHERE o.endpoint = ? GROUP BY 1`),
      // The rows as they read with their acknowledgements folded in (the counts' rule): an acknowledged event is
      // delivered at its acknowledgement's time and status, one attempt more than its failures.
      events: database.prepare(`
        SELECT o.endpoint, o.sequence, o.event_id, o.receipt_id, o.body,
          CASE WHEN a.sequence IS NOT NULL THEN 'delivered' ELSE o.status END AS status,
          o.attempts + (a.sequence IS NOT NULL) AS attempts, o.next_attempt_at,
          coalesce(a.at, o.last_attempt_at) AS last_attempt_at, coalesce(a.status, o.last_status) AS last_status,
          CASE WHEN a.sequence IS NOT NULL THEN NULL ELSE o.last_error END AS last_error,
          o.created_at, coalesce(a.at, o.delivered_at) AS delivered_at
        FROM webhook_outbox o LEFT JOIN webhook_acks a ON a.endpoint = o.endpoint AND a.sequence = o.sequence
        WHERE o.endpoint = @endpoint AND o.sequence >= @from
          AND (@status IS NULL OR (CASE WHEN a.sequence IS NOT NULL THEN 'delivered' ELSE o.status END) = @status)
        ORDER BY o.sequence LIMIT @limit`),
    };
    // BEGIN IMMEDIATE: every acknowledgement's lease check (inside its statement) sees one state. A dispatcher
    // whose lease expired (another process took over) records nothing; its events are sent again under the same ids.
    const marks = database.transaction((endpoint: string, holder: string, deliveries: readonly Delivery[]): number => {
      let marked = 0;
      for (const delivery of deliveries) marked += this.acknowledge(endpoint, holder, delivery);
      return marked;
    });
    this.markDeliveredTransaction = (endpoint, holder, deliveries) => marks.immediate(endpoint, holder, deliveries);
  }

  ensureEndpoints(names: readonly string[]): void {
    writeTransaction(this.database, () => {
      for (const name of names) this.statements.ensure.run(name);
    })();
  }

  append(endpoint: string, build: (sequence: number) => NewOutboxEvent): OutboxEvent {
    const sequence = this.statements.nextSequence.get({ name: endpoint }) as number | undefined;
    if (sequence === undefined) throw new Error(`webhook endpoint '${endpoint}' has no outbox row (ensureEndpoints first)`);
    const event = build(sequence);
    const createdAt = new Date().toISOString();
    this.statements.insert.run(endpoint, sequence, event.eventId, event.receiptId, event.body, createdAt);
    return {
      endpoint,
      sequence,
      ...event,
      status: 'pending',
      attempts: 0,
      nextAttemptAt: 0,
      lastAttemptAt: null,
      lastStatus: null,
      lastError: null,
      createdAt,
      deliveredAt: null,
    };
  }

  acquireLease(endpoint: string, holder: string, now: number, ttlMs: number): boolean {
    return this.statements.lease.run({ name: endpoint, holder, now, expires: now + ttlMs }).changes === 1;
  }

  releaseLease(endpoint: string, holder: string): void {
    this.statements.release.run(endpoint, holder);
  }

  pending(endpoint: string, limit: number): OutboxEvent[] {
    return (this.statements.pending.all({ endpoint, limit }) as EventRow[]).map(toEvent);
  }

  markDelivered(endpoint: string, holder: string, deliveries: readonly Delivery[]): number {
    if (deliveries.length === 1) return this.acknowledge(endpoint, holder, deliveries[0]!);
    return deliveries.length === 0 ? 0 : this.markDeliveredTransaction(endpoint, holder, deliveries);
  }

  /** One acknowledgement (a row of `webhook_acks`); every PENDING_FROM_STEP sequences, `pending_from` follows. */
  private acknowledge(endpoint: string, holder: string, delivery: Delivery): number {
    const marked = this.statements.acknowledge.run({ endpoint, holder, ...delivery }).changes;
    if (marked === 1 && delivery.sequence % PENDING_FROM_STEP === 0) {
      this.statements.raisePendingFrom.run({ endpoint, next: delivery.sequence + 1 });
    }
    return marked;
  }

  markAttemptFailed(
    endpoint: string,
    sequence: number,
    holder: string,
    outcome: { status: number | null; error: string; nextAttemptAt: number | null },
  ): void {
    this.statements.attemptFailed.run({
      endpoint,
      sequence,
      holder,
      status: outcome.status,
      error: outcome.error,
      next: outcome.nextAttemptAt,
      at: new Date().toISOString(),
    });
  }

  pause(endpoint: string, sequence: number, holder: string, outcome: { status: number | null; error: string; reason: string }): boolean {
    const at = new Date().toISOString();
    return this.database
      .transaction(() => {
        const recorded = this.statements.attemptExhausted.run({
          endpoint,
          sequence,
          holder,
          status: outcome.status,
          error: outcome.error,
          at,
        });
        if (recorded.changes !== 1) return false;
        return this.statements.pause.run({ endpoint, sequence, holder, at, reason: outcome.reason }).changes === 1;
      })
      .immediate();
  }

  resume(endpoint: string): { pausedSequence: number | null; wasPaused: boolean; wasDisabled: boolean } {
    return this.database
      .transaction(() => {
        const state = this.unpause(endpoint);
        this.statements.enable.run(endpoint);
        return state;
      })
      .immediate();
  }

  /** Gives the event a pause stopped at a fresh cycle of attempts; says what the endpoint's state was. */
  private unpause(endpoint: string): { pausedSequence: number | null; wasPaused: boolean; wasDisabled: boolean } {
    const row = this.statements.pausedState.get(endpoint) as
      | { paused_at: string | null; paused_sequence: number | null; disabled_at: string | null }
      | undefined;
    if (!row) return { pausedSequence: null, wasPaused: false, wasDisabled: false };
    if (row.paused_at !== null && row.paused_sequence !== null) this.statements.freshCycle.run(endpoint, row.paused_sequence);
    return {
      pausedSequence: row.paused_at === null ? null : row.paused_sequence,
      wasPaused: row.paused_at !== null,
      wasDisabled: row.disabled_at !== null,
    };
  }

  disable(endpoint: string, reason: string): void {
    this.statements.disable.run(new Date().toISOString(), reason, endpoint);
  }

  replay(endpoint: string, selection: { failed: true } | { fromSequence: number }): number {
    return writeTransaction(this.database, () => {
      this.unpause(endpoint);
      this.statements.enable.run(endpoint);
      if ('failed' in selection) {
        // Failed events have no acknowledgement; the delivered ones around them keep theirs (not sent again).
        const from = this.statements.firstFailed.get(endpoint) as number | null;
        this.statements.lowerPendingFrom.run({ endpoint, from });
        return this.statements.replayFailed.run(endpoint).changes;
      }
      this.statements.forgetAcksFrom.run(endpoint, selection.fromSequence);
      this.statements.lowerPendingFrom.run({ endpoint, from: selection.fromSequence });
      return this.statements.replayFrom.run(endpoint, selection.fromSequence).changes;
    })();
  }

  endpoint(name: string): EndpointState | undefined {
    const row = this.statements.endpoint.get(name) as
      | {
          name: string;
          disabled_at: string | null;
          disabled_reason: string | null;
          paused_at: string | null;
          paused_reason: string | null;
          paused_sequence: number | null;
          lease_holder: string | null;
          lease_expires_at: number | null;
        }
      | undefined;
    if (!row) return undefined;
    const counts: Record<OutboxStatus, number> = { pending: 0, delivered: 0, failed: 0 };
    for (const entry of this.statements.counts.all(name) as Array<{ status: OutboxStatus; count: number }>)
      counts[entry.status] = entry.count;
    return {
      name: row.name,
      nextSequence: this.statements.nextSequence.get({ name }) as number,
      disabledAt: row.disabled_at,
      disabledReason: row.disabled_reason,
      pausedAt: row.paused_at,
      pausedReason: row.paused_reason,
      pausedSequence: row.paused_sequence,
      leaseHolder: row.lease_holder,
      leaseExpiresAt: row.lease_expires_at,
      counts,
    };
  }

  events(endpoint: string, options: { fromSequence?: number; status?: OutboxStatus; limit: number }): OutboxEvent[] {
    const rows = this.statements.events.all({
      endpoint,
      from: options.fromSequence ?? 0,
      status: options.status ?? null,
      limit: options.limit,
    }) as EventRow[];
    return rows.map(toEvent);
  }
}
