import { inTransaction, type PostgresPool, type Queryable } from '../../store/postgres/database.js';
import { postgresClientOf } from '../../store/postgres/unit-of-work.js';
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
import { SQL, toEvent, type EventRow } from './statements.js';

/** How often an acknowledgement moves `pending_from` up to itself (as the SQLite adapter does). */
const PENDING_FROM_STEP = 256;

interface EndpointRow {
  name: string;
  next_sequence: number;
  disabled_at: string | null;
  disabled_reason: string | null;
  paused_at: string | null;
  paused_reason: string | null;
  paused_sequence: number | null;
  lease_holder: string | null;
  lease_expires_at: number | null;
}

/**
 * The outbox on PostgreSQL, for several replicas sharing one database (tables: ./migrations.ts). An append runs in
 * the receipt's unit of work and increments its endpoint's counter there, so the endpoint's row stays locked until
 * that unit commits: sequences are gap-free and in commit order across replicas. Steps the port makes atomic (a
 * pause, a resume, a replay, several acknowledgements) run in one transaction; the lease is one conditional UPDATE.
 */
export class PostgresOutboxStore implements OutboxStore {
  constructor(private readonly pool: PostgresPool) {}

  async ensureEndpoints(names: readonly string[]): Promise<void> {
    if (names.length > 0) await this.pool.query(SQL.ensure, [[...names]]);
  }

  async append(tx: Transaction | undefined, endpoint: string, build: (sequence: number) => NewOutboxEvent): Promise<OutboxEvent> {
    // No implicit transaction on a pool: the caller's unit of work is required.
    if (tx === undefined) throw new Error('the PostgreSQL outbox store appends only in a unit of work (a transaction was not given)');
    const client = postgresClientOf(tx, this.pool);
    const { rows } = await client.query<{ sequence: number }>(SQL.takeSequence, [endpoint]);
    const sequence = rows[0]?.sequence;
    if (sequence === undefined) throw new Error(`webhook endpoint '${endpoint}' has no outbox row (ensureEndpoints first)`);
    const event = build(sequence);
    const createdAt = new Date().toISOString();
    await client.query(SQL.insert, [endpoint, sequence, event.eventId, event.receiptId, event.body, createdAt]);
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

  async acquireLease(endpoint: string, holder: string, now: number, ttlMs: number): Promise<boolean> {
    return (await this.pool.query(SQL.lease, [endpoint, holder, now, now + ttlMs])).rowCount === 1;
  }

  async releaseLease(endpoint: string, holder: string): Promise<void> {
    await this.pool.query(SQL.release, [endpoint, holder]);
  }

  async pending(endpoint: string, limit: number): Promise<OutboxEvent[]> {
    return (await this.pool.query<EventRow>(SQL.pending, [endpoint, limit])).rows.map(toEvent);
  }

  async markDelivered(endpoint: string, holder: string, deliveries: readonly Delivery[]): Promise<number> {
    if (deliveries.length === 0) return 0;
    if (deliveries.length === 1) return acknowledge(this.pool, endpoint, holder, deliveries[0]!);
    return inTransaction(this.pool, async (client) => {
      let marked = 0;
      for (const delivery of deliveries) marked += await acknowledge(client, endpoint, holder, delivery);
      return marked;
    });
  }

  async markAttemptFailed(
    endpoint: string,
    sequence: number,
    holder: string,
    outcome: { status: number | null; error: string; nextAttemptAt: number | null },
  ): Promise<void> {
    await this.pool.query(SQL.attemptFailed, [
      endpoint,
      sequence,
      holder,
      outcome.status,
      outcome.error,
      outcome.nextAttemptAt,
      new Date().toISOString(),
    ]);
  }

  async pause(
    endpoint: string,
    sequence: number,
    holder: string,
    outcome: { status: number | null; error: string; reason: string },
  ): Promise<boolean> {
    const at = new Date().toISOString();
    return inTransaction(this.pool, async (client) => {
      const recorded = await client.query(SQL.attemptExhausted, [endpoint, sequence, holder, outcome.status, outcome.error, at]);
      if (recorded.rowCount !== 1) return false;
      return (await client.query(SQL.pause, [endpoint, sequence, holder, at, outcome.reason])).rowCount === 1;
    });
  }

  async resume(endpoint: string): Promise<ResumedEndpoint> {
    return inTransaction(this.pool, async (client) => {
      const state = await unpause(client, endpoint);
      await client.query(SQL.enable, [endpoint]);
      return state;
    });
  }

  async disable(endpoint: string, reason: string): Promise<void> {
    await this.pool.query(SQL.disable, [endpoint, new Date().toISOString(), reason]);
  }

  async replay(endpoint: string, selection: ReplaySelection): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      await unpause(client, endpoint);
      await client.query(SQL.enable, [endpoint]);
      if ('failed' in selection) {
        // Failed events have no acknowledgement; the delivered ones around them keep theirs (not sent again).
        const { rows } = await client.query<{ sequence: number | null }>(SQL.firstFailed, [endpoint]);
        await client.query(SQL.lowerPendingFrom, [endpoint, rows[0]?.sequence ?? null]);
        return (await client.query(SQL.replayFailed, [endpoint])).rowCount ?? 0;
      }
      await client.query(SQL.forgetAcksFrom, [endpoint, selection.fromSequence]);
      await client.query(SQL.lowerPendingFrom, [endpoint, selection.fromSequence]);
      return (await client.query(SQL.replayFrom, [endpoint, selection.fromSequence])).rowCount ?? 0;
    });
  }

  async endpoint(name: string): Promise<EndpointState | undefined> {
    const row = (await this.pool.query<EndpointRow>(SQL.endpoint, [name])).rows[0];
    if (!row) return undefined;
    const counts: Record<OutboxStatus, number> = { pending: 0, delivered: 0, failed: 0 };
    const { rows } = await this.pool.query<{ status: OutboxStatus; count: number }>(SQL.counts, [name]);
    for (const entry of rows) counts[entry.status] = entry.count;
    return {
      name: row.name,
      nextSequence: row.next_sequence,
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
    const { rows } = await this.pool.query<EventRow>(SQL.events, [
      endpoint,
      options.fromSequence ?? 0,
      options.status ?? null,
      options.limit,
    ]);
    return rows.map(toEvent);
  }
}

/** One acknowledgement (a row of `webhook_acks`); every PENDING_FROM_STEP sequences, `pending_from` follows. */
async function acknowledge(database: Queryable, endpoint: string, holder: string, delivery: Delivery): Promise<number> {
  const { rowCount } = await database.query(SQL.acknowledge, [endpoint, delivery.sequence, delivery.status, delivery.at, holder]);
  if (rowCount === 1 && delivery.sequence % PENDING_FROM_STEP === 0) {
    await database.query(SQL.raisePendingFrom, [endpoint, delivery.sequence + 1]);
  }
  return rowCount ?? 0;
}

/** Gives the event a pause stopped at a fresh cycle of attempts (the endpoint's row locked); says what its state was. */
async function unpause(client: Queryable, endpoint: string): Promise<ResumedEndpoint> {
  const { rows } = await client.query<{ paused_at: string | null; paused_sequence: number | null; disabled_at: string | null }>(
    SQL.pausedState,
    [endpoint],
  );
  const row = rows[0];
  if (!row) return { pausedSequence: null, wasPaused: false, wasDisabled: false };
  if (row.paused_at !== null && row.paused_sequence !== null) await client.query(SQL.freshCycle, [endpoint, row.paused_sequence]);
  return {
    pausedSequence: row.paused_at === null ? null : row.paused_sequence,
    wasPaused: row.paused_at !== null,
    wasDisabled: row.disabled_at !== null,
  };
}
