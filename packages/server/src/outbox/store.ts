import type { SqliteDatabase } from '../store/database.js';

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
 *   endpoint. Nothing else is written per event: `next_sequence` only holds the first sequence (a floor);
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
   * while the endpoint is disabled (410 Gone), so a disabled endpoint has no deliverer.
   */
  acquireLease(endpoint: string, holder: string, now: number, ttlMs: number): Awaitable<boolean>;
  releaseLease(endpoint: string, holder: string): Awaitable<void>;
  /** The endpoint's pending events, lowest sequence first, at most `limit` (the dispatcher reads ahead). */
  pending(endpoint: string, limit: number): Awaitable<OutboxEvent[]>;
  /**
   * Marks acknowledged events delivered in one transaction, each only if still pending and only while
   * `holder` holds the endpoint's lease; returns how many were marked. (The dispatcher marks one event at a
   * time, before sending the next: see dispatcher.ts.)
   */
  markDelivered(endpoint: string, holder: string, deliveries: readonly Delivery[]): Awaitable<number>;
  /** Records a failed attempt: `nextAttemptAt` to retry, or null to give the event up (`failed`). */
  markAttemptFailed(
    endpoint: string,
    sequence: number,
    holder: string,
    outcome: { status: number | null; error: string; nextAttemptAt: number | null },
  ): Awaitable<void>;
  disable(endpoint: string, reason: string): Awaitable<void>;
  /** Puts events back to pending (attempts reset) and re-enables the endpoint; returns how many. */
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

/** The outbox in the gateway's SQLite database (tables from `outboxMigrations`). */
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
        WHERE name = @name AND disabled_at IS NULL
          AND (lease_holder IS NULL OR lease_holder = @holder OR lease_expires_at <= @now)`),
      release: database.prepare(
        'UPDATE webhook_endpoints SET lease_holder = NULL, lease_expires_at = NULL WHERE name = ? AND lease_holder = ?',
      ),
      pending: database.prepare("SELECT * FROM webhook_outbox WHERE endpoint = ? AND status = 'pending' ORDER BY sequence LIMIT ?"),
      holdsLease: database.prepare('SELECT 1 FROM webhook_endpoints WHERE name = ? AND lease_holder = ?').pluck(),
      // One event (what the dispatcher marks): the lease check inside the one statement, no explicit transaction.
      deliveredIfLeased: database.prepare(`
        UPDATE webhook_outbox SET status = 'delivered', attempts = attempts + 1, last_status = @status,
          last_error = NULL, last_attempt_at = @at, delivered_at = @at
        WHERE endpoint = @endpoint AND sequence = @sequence AND status = 'pending'
          AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = @endpoint AND lease_holder = @holder)`),
      // The lease is checked once per batch, in the same write transaction (markDelivered).
      delivered: database.prepare(`
        UPDATE webhook_outbox SET status = 'delivered', attempts = attempts + 1, last_status = @status,
          last_error = NULL, last_attempt_at = @at, delivered_at = @at
        WHERE endpoint = @endpoint AND sequence = @sequence AND status = 'pending'`),
      attemptFailed: database.prepare(`
        UPDATE webhook_outbox SET attempts = attempts + 1, last_status = @status, last_error = @error,
          last_attempt_at = @at, next_attempt_at = COALESCE(@next, next_attempt_at),
          status = CASE WHEN @next IS NULL THEN 'failed' ELSE 'pending' END
        WHERE endpoint = @endpoint AND sequence = @sequence AND status = 'pending'
          AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = @endpoint AND lease_holder = @holder)`),
      disable: database.prepare('UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE name = ?'),
      enable: database.prepare('UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL WHERE name = ?'),
      replayFailed: database.prepare(`
        UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_attempt_at = 0, delivered_at = NULL
        WHERE endpoint = ? AND status = 'failed'`),
      replayFrom: database.prepare(`
        UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_attempt_at = 0, delivered_at = NULL
        WHERE endpoint = ? AND sequence >= ?`),
      endpoint: database.prepare('SELECT * FROM webhook_endpoints WHERE name = ?'),
      counts: database.prepare('SELECT status, COUNT(*) AS count FROM webhook_outbox WHERE endpoint = ? GROUP BY status'),
      events: database.prepare(`
        SELECT * FROM webhook_outbox WHERE endpoint = @endpoint AND sequence >= @from
          AND (@status IS NULL OR status = @status) ORDER BY sequence LIMIT @limit`),
    };
    // BEGIN IMMEDIATE: the lease check and the updates see one state. A dispatcher whose lease expired
    // (another process took over) changes nothing; its events are sent again under the same ids.
    const marks = database.transaction((endpoint: string, holder: string, deliveries: readonly Delivery[]): number => {
      if (this.statements.holdsLease.get(endpoint, holder) === undefined) return 0;
      let marked = 0;
      for (const delivery of deliveries) marked += this.statements.delivered.run({ endpoint, ...delivery }).changes;
      return marked;
    });
    this.markDeliveredTransaction = (endpoint, holder, deliveries) => marks.immediate(endpoint, holder, deliveries);
  }

  ensureEndpoints(names: readonly string[]): void {
    this.database.transaction(() => {
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
    return (this.statements.pending.all(endpoint, limit) as EventRow[]).map(toEvent);
  }

  markDelivered(endpoint: string, holder: string, deliveries: readonly Delivery[]): number {
    if (deliveries.length === 1) return this.statements.deliveredIfLeased.run({ endpoint, holder, ...deliveries[0]! }).changes;
    return deliveries.length === 0 ? 0 : this.markDeliveredTransaction(endpoint, holder, deliveries);
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

  disable(endpoint: string, reason: string): void {
    this.statements.disable.run(new Date().toISOString(), reason, endpoint);
  }

  replay(endpoint: string, selection: { failed: true } | { fromSequence: number }): number {
    return this.database.transaction(() => {
      this.statements.enable.run(endpoint);
      const result =
        'failed' in selection
          ? this.statements.replayFailed.run(endpoint)
          : this.statements.replayFrom.run(endpoint, selection.fromSequence);
      return result.changes;
    })();
  }

  endpoint(name: string): EndpointState | undefined {
    const row = this.statements.endpoint.get(name) as
      | {
          name: string;
          disabled_at: string | null;
          disabled_reason: string | null;
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
