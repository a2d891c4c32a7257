import { CHANGE_RETENTION_MS, ChangeSubscribers, type ChangeFeed, type ChangePayloads, type ChangeTopic } from '../changes.js';
import type { Migration, SqliteDatabase } from './database.js';
import { sqliteTransactionOf } from './unit-of-work.js';

/** The changes table: ids grow with each commit (one writer at a time), so "after id n" is exactly what is new. */
export const changeMigrations: Migration[] = [
  {
    id: 'changes-001',
    sql: `CREATE TABLE changes (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      topic TEXT NOT NULL,
      payload TEXT NOT NULL,
      published_at INTEGER NOT NULL
    );`,
  },
];

/** How often a feed reads what was published since its last read: the bound on a change's delay between workers. */
export const CHANGE_POLL_INTERVAL_MS = 200;
/** How often old changes are deleted. */
const PURGE_INTERVAL_MS = 60_000;

interface ChangeRow {
  id: number;
  topic: string;
  payload: string;
}

/**
 * The change feed (../changes.ts) on SQLite: each change is a row of `changes`, and every feed on the file (each
 * worker of `serve --workers N` opens its own) reads the rows after the last it saw every CHANGE_POLL_INTERVAL_MS,
 * one indexed range read while nothing changed. A change published in a unit of work is a row of that
 * transaction, so a rollback leaves nothing to deliver.
 */
export class SqliteChangeFeed implements ChangeFeed {
  private readonly subscribers: ChangeSubscribers;
  private readonly statements;
  private lastId: number;
  private readonly pollTimer: NodeJS.Timeout;
  private readonly purgeTimer: NodeJS.Timeout;
  private isClosed = false;

  constructor(
    private readonly database: SqliteDatabase,
    options: { pollIntervalMs?: number; onError?: (error: unknown) => void } = {},
  ) {
    this.subscribers = new ChangeSubscribers(options.onError);
    this.statements = {
      insert: database.prepare('INSERT INTO changes (topic, payload, published_at) VALUES (?, ?, ?)'),
      after: database.prepare('SELECT id, topic, payload FROM changes WHERE id > ? ORDER BY id LIMIT 1000'),
      last: database.prepare('SELECT COALESCE(MAX(id), 0) AS id FROM changes'),
      purge: database.prepare('DELETE FROM changes WHERE published_at < ?'),
    };
    this.lastId = (this.statements.last.get() as { id: number }).id;
    this.pollTimer = setInterval(() => this.poll(options.onError), options.pollIntervalMs ?? CHANGE_POLL_INTERVAL_MS);
    this.pollTimer.unref();
    this.purgeTimer = setInterval(() => {
      try {
        this.statements.purge.run(Date.now() - CHANGE_RETENTION_MS);
      } catch (error) {
        options.onError?.(error);
      }
    }, PURGE_INTERVAL_MS);
    this.purgeTimer.unref();
  }

  async publish<T extends ChangeTopic>(topic: T, payload: ChangePayloads[T], tx?: { readonly adapter: string }): Promise<void> {
    if (tx) sqliteTransactionOf(tx, this.database);
    this.statements.insert.run(topic, JSON.stringify(payload), Date.now());
  }

  subscribe<T extends ChangeTopic>(topic: T, handler: (payload: ChangePayloads[T]) => void): () => void {
    return this.subscribers.add(topic, handler);
  }

  /** Reads and delivers what was published since the last read (a busy database: the next tick tries again). */
  poll(onError?: (error: unknown) => void): void {
    if (this.isClosed) return;
    try {
      for (;;) {
        const rows = this.statements.after.all(this.lastId) as ChangeRow[];
        for (const row of rows) {
          this.lastId = row.id;
          if (this.subscribers.size > 0) this.subscribers.deliver(row.topic, JSON.parse(row.payload));
        }
        if (rows.length < 1000) return;
      }
    } catch (error) {
      onError?.(error);
    }
  }

  async close(): Promise<void> {
    this.isClosed = true;
    clearInterval(this.pollTimer);
    clearInterval(this.purgeTimer);
  }
}

/** The change feed of one database migrated with `changeMigrations`. */
export function sqliteChangeFeed(
  database: SqliteDatabase,
  options?: { pollIntervalMs?: number; onError?: (error: unknown) => void },
): ChangeFeed {
  return new SqliteChangeFeed(database, options);
}
