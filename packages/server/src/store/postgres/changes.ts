import pg from 'pg';
import { CHANGE_RETENTION_MS, ChangeSubscribers, type ChangeFeed, type ChangePayloads, type ChangeTopic } from '../changes.js';
import type { Transaction } from '../unit-of-work.js';
import { CONNECT_TIMEOUT_MS, type PostgresPool } from './database.js';
import { postgresClientOf } from './unit-of-work.js';
import { CHANGE_CHANNEL } from './change-migrations.js';

export { CHANGE_CHANNEL, postgresChangeMigrations } from './change-migrations.js';

/** Reconnect delays: from the first to the longest, doubling (with jitter) while the database stays away. */
export const RECONNECT_MIN_MS = 100;
export const RECONNECT_MAX_MS = 5_000;
/**
 * A catch-up reads what was published since the last change seen, less this margin: ids are taken before commit,
 * so a change committed just after a later one has a smaller id and a commit time a little earlier than it.
 */
const CATCH_UP_MARGIN_MS = 10_000;
const PURGE_INTERVAL_MS = 60_000;
/** Ids delivered recently, kept to drop the duplicates a catch-up reads again. */
const REMEMBERED_IDS = 10_000;

/** One statement: the row, and its NOTIFY, which PostgreSQL sends when (and only if) the transaction commits. */
const PUBLISH = `WITH inserted AS (INSERT INTO changes (topic, payload) VALUES ($1, $2) RETURNING id, published_at)
  SELECT pg_notify('${CHANGE_CHANNEL}', json_build_object('id', id, 'at', published_at, 'topic', $1::text, 'payload', $2::text)::text)
  FROM inserted`;

interface Notice {
  id: number;
  at: number;
  topic: string;
  payload: string;
}

export interface PostgresChangeFeedOptions {
  /** Reports a lost listening connection, a failed reconnect or a throwing handler (never with the connection string). */
  onError?: (error: unknown) => void;
  /** Called after each reconnect's catch-up read (tests wait on it). */
  onCaughtUp?: (delivered: number) => void;
  /** The first reconnect delay (default RECONNECT_MIN_MS). */
  reconnectMinMs?: number;
}

/**
 * The change feed (../changes.ts) on PostgreSQL: a change is a row of `changes` and a NOTIFY on CHANGE_CHANNEL in
 * the same statement, so it is announced at commit. Each replica LISTENs on a dedicated connection (not one of the
 * pool's: a pooled connection is handed to other work). When that connection drops (a restart, a failover) the
 * feed reconnects with backoff, LISTENs again, then reads the rows published since shortly before the last change
 * it saw, so nothing announced while it was away is missed; ids already delivered are dropped.
 */
export class PostgresChangeFeed implements ChangeFeed {
  private readonly subscribers: ChangeSubscribers;
  private client: pg.Client | undefined;
  private readonly delivered = new Set<number>();
  /** Commit time (the database's clock) of the newest change seen; the start of the next catch-up read. */
  private seenAt = 0;
  /** The newest id when this feed opened: what was published before it is not this feed's to deliver. */
  private floorId = 0;
  private isClosed = false;
  private reconnectDelay: number;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly purgeTimer: NodeJS.Timeout;

  private constructor(
    private readonly pool: PostgresPool,
    private readonly connectionString: string,
    private readonly options: PostgresChangeFeedOptions,
  ) {
    this.subscribers = new ChangeSubscribers(options.onError);
    this.reconnectDelay = options.reconnectMinMs ?? RECONNECT_MIN_MS;
    this.purgeTimer = setInterval(() => {
      pool
        .query('DELETE FROM changes WHERE published_at < $1', [Date.now() - CHANGE_RETENTION_MS])
        .catch(options.onError ?? (() => undefined));
    }, PURGE_INTERVAL_MS);
    this.purgeTimer.unref();
  }

  /** Opens the listening connection; rejects when the database cannot be reached now. */
  static async open(pool: PostgresPool, connectionString: string, options: PostgresChangeFeedOptions = {}): Promise<PostgresChangeFeed> {
    const feed = new PostgresChangeFeed(pool, connectionString, options);
    await feed.listen();
    const { rows } = await pool.query<{ now: number; id: number }>(
      'SELECT (extract(epoch from clock_timestamp()) * 1000)::BIGINT AS now, COALESCE(MAX(id), 0) AS id FROM changes',
    );
    feed.seenAt = rows[0]!.now;
    feed.floorId = rows[0]!.id;
    return feed;
  }

  async publish<T extends ChangeTopic>(topic: T, payload: ChangePayloads[T], tx?: Transaction): Promise<void> {
    const queryable = tx ? postgresClientOf(tx) : this.pool;
    await queryable.query(PUBLISH, [topic, JSON.stringify(payload)]);
  }

  subscribe<T extends ChangeTopic>(topic: T, handler: (payload: ChangePayloads[T]) => void): () => void {
    return this.subscribers.add(topic, handler);
  }

  async close(): Promise<void> {
    this.isClosed = true;
    clearInterval(this.purgeTimer);
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private deliver(notice: Notice): void {
    if (this.isClosed || this.delivered.has(notice.id)) return;
    if (this.delivered.size >= REMEMBERED_IDS) this.delivered.clear();
    this.delivered.add(notice.id);
    this.seenAt = Math.max(this.seenAt, notice.at);
    this.subscribers.deliver(notice.topic, JSON.parse(notice.payload));
  }

  /** A dedicated client: LISTEN first, so a change committed during the catch-up read is announced to it too. */
  private async listen(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.connectionString,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      application_name: 'gateway-changes',
    });
    let isLost = false;
    const lost = (error?: Error) => {
      if (isLost) return;
      isLost = true;
      if (this.client === client) this.client = undefined;
      client.end().catch(() => undefined);
      if (error) this.options.onError?.(error);
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => {
      if (message.channel !== CHANGE_CHANNEL || !message.payload) return;
      try {
        this.deliver(JSON.parse(message.payload) as Notice);
      } catch (error) {
        this.options.onError?.(error);
      }
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
    } catch (error) {
      isLost = true;
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.isClosed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
  }

  private scheduleReconnect(): void {
    if (this.isClosed || this.reconnectTimer) return;
    const delay = this.reconnectDelay * (0.5 + Math.random() / 2);
    this.reconnectDelay = Math.min(this.reconnectDelay * 2, Math.max(RECONNECT_MAX_MS, this.reconnectDelay));
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.reconnect().catch((error: unknown) => {
        this.options.onError?.(error);
        this.scheduleReconnect();
      });
    }, delay);
    this.reconnectTimer.unref();
  }

  private async reconnect(): Promise<void> {
    if (this.isClosed) return;
    await this.listen();
    const delivered = await this.catchUp();
    this.reconnectDelay = this.options.reconnectMinMs ?? RECONNECT_MIN_MS;
    this.options.onCaughtUp?.(delivered);
  }

  /** What was published while this feed was not listening, in id order; returns how many changes it delivered. */
  private async catchUp(): Promise<number> {
    const { rows } = await this.pool.query<{ id: number; published_at: number; topic: string; payload: string }>(
      'SELECT id, published_at, topic, payload FROM changes WHERE published_at >= $1 AND id > $2 ORDER BY id',
      [this.seenAt - CATCH_UP_MARGIN_MS, this.floorId],
    );
    let count = 0;
    for (const row of rows) {
      if (this.delivered.has(row.id)) continue;
      count += 1;
      this.deliver({ id: row.id, at: row.published_at, topic: row.topic, payload: row.payload });
    }
    return count;
  }
}

/** The change feed of one PostgreSQL database migrated with `postgresChangeMigrations`; listening once it resolves. */
export function openPostgresChangeFeed(
  pool: PostgresPool,
  connectionString: string,
  options?: PostgresChangeFeedOptions,
): Promise<ChangeFeed> {
  return PostgresChangeFeed.open(pool, connectionString, options);
}
