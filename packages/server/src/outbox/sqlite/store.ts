import { writeTransaction, type SqliteDatabase } from '../../store/sqlite/database.js';
import type { Transaction } from '../../store/unit-of-work.js';
import type {
  Delivery,
  EndpointState,
  NewOutboxEvent,
  OutboxEvent,
  OutboxStatus,
  OutboxStore,
  ReplaySelection,
  ResumedEndpoint,
} from '../ports.js';
import { outboxStatements, toEvent, type EventRow, type OutboxStatements } from './statements.js';

/**
 * How often an acknowledgement moves `pending_from` (where the search for pending events starts) up to itself:
 * one small extra write per this many events, and a search that starts at most this many events back.
 */
const PENDING_FROM_STEP = 256;

/** The adapter name a SQLite unit of work gives its transactions (`Transaction.adapter`). */
export const SQLITE_ADAPTER = 'sqlite';

/**
 * The outbox in the gateway's SQLite database (tables from `outboxMigrations`). An acknowledgement is a row of
 * `webhook_acks`; the event's own row (with its ~2 KB body) is written once at append and again only for a
 * failed attempt or a replay. So the receipt's commit writes the event row and its key, and an acknowledgement
 * commits one small page. (It used to rewrite the event's row and its entry in a pending index: with events
 * on, the gateway made 19 WAL writes per tool call, now 11; 3 without events. docs/webhooks.md#performance.)
 */
export class SqliteOutboxStore implements OutboxStore {
  private readonly statements: OutboxStatements;
  private readonly markDeliveredTransaction: (endpoint: string, holder: string, deliveries: readonly Delivery[]) => number;

  constructor(private readonly database: SqliteDatabase) {
    this.statements = outboxStatements(database);
    // BEGIN IMMEDIATE: every acknowledgement's lease check (inside its statement) sees one state. A dispatcher
    // whose lease expired (another process took over) records nothing; its events are sent again under the same ids.
    const marks = database.transaction((endpoint: string, holder: string, deliveries: readonly Delivery[]): number => {
      let marked = 0;
      for (const delivery of deliveries) marked += this.acknowledge(endpoint, holder, delivery);
      return marked;
    });
    this.markDeliveredTransaction = (endpoint, holder, deliveries) => marks.immediate(endpoint, holder, deliveries);
  }

  async ensureEndpoints(names: readonly string[]): Promise<void> {
    writeTransaction(this.database, () => {
      for (const name of names) this.statements.ensure.run(name);
    })();
  }

  /**
   * Runs at call time, on this connection, inside the caller's transaction, and answers a settled promise: nothing
   * can run on the connection between the sequence read and the insert. A failure throws at once (not a rejected
   * promise), so a synchronous caller's transaction rolls back with it.
   */
  append(tx: Transaction | undefined, endpoint: string, build: (sequence: number) => NewOutboxEvent): Promise<OutboxEvent> {
    if (tx !== undefined) this.checkTransaction(tx);
    const sequence = this.statements.nextSequence.get({ name: endpoint }) as number | undefined;
    if (sequence === undefined) throw new Error(`webhook endpoint '${endpoint}' has no outbox row (ensureEndpoints first)`);
    const event = build(sequence);
    const createdAt = new Date().toISOString();
    this.statements.insert.run(endpoint, sequence, event.eventId, event.receiptId, event.body, createdAt);
    return Promise.resolve({
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
    });
  }

  /** A transaction is this adapter's and still open: the connection is inside it (SQLite has one per process). */
  private checkTransaction(tx: Transaction): void {
    if (tx.adapter !== SQLITE_ADAPTER) {
      throw new Error(`the SQLite outbox store was given a transaction of the '${tx.adapter}' adapter`);
    }
    if (!this.database.inTransaction) throw new Error('the SQLite outbox store was given a transaction that is no longer open');
  }

  async acquireLease(endpoint: string, holder: string, now: number, ttlMs: number): Promise<boolean> {
    return this.statements.lease.run({ name: endpoint, holder, now, expires: now + ttlMs }).changes === 1;
  }

  async releaseLease(endpoint: string, holder: string): Promise<void> {
    this.statements.release.run(endpoint, holder);
  }

  async pending(endpoint: string, limit: number): Promise<OutboxEvent[]> {
    return (this.statements.pending.all({ endpoint, limit }) as EventRow[]).map(toEvent);
  }

  async markDelivered(endpoint: string, holder: string, deliveries: readonly Delivery[]): Promise<number> {
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

  async markAttemptFailed(
    endpoint: string,
    sequence: number,
    holder: string,
    outcome: { status: number | null; error: string; nextAttemptAt: number | null },
  ): Promise<void> {
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

  async pause(
    endpoint: string,
    sequence: number,
    holder: string,
    outcome: { status: number | null; error: string; reason: string },
  ): Promise<boolean> {
    const at = new Date().toISOString();
    return writeTransaction(this.database, () => {
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
    })();
  }

  async resume(endpoint: string): Promise<ResumedEndpoint> {
    return writeTransaction(this.database, () => {
      const state = this.unpause(endpoint);
      this.statements.enable.run(endpoint);
      return state;
    })();
  }

  /** Gives the event a pause stopped at a fresh cycle of attempts; says what the endpoint's state was. */
  private unpause(endpoint: string): ResumedEndpoint {
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

  async disable(endpoint: string, reason: string): Promise<void> {
    this.statements.disable.run(new Date().toISOString(), reason, endpoint);
  }

  async replay(endpoint: string, selection: ReplaySelection): Promise<number> {
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

  async endpoint(name: string): Promise<EndpointState | undefined> {
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

  async events(endpoint: string, options: { fromSequence?: number; status?: OutboxStatus; limit: number }): Promise<OutboxEvent[]> {
    const rows = this.statements.events.all({
      endpoint,
      from: options.fromSequence ?? 0,
      status: options.status ?? null,
      limit: options.limit,
    }) as EventRow[];
    return rows.map(toEvent);
  }
}
