import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { compareText, GatewayError } from '@gateway/core';
import type { Migration } from '../schema/migration.js';

export type SqliteDatabase = Database.Database;

/**
 * How long a statement waits for another connection's lock (another worker of `serve --workers`, the CLI, the
 * background checkpointer) before SQLite gives up with SQLITE_BUSY: the bound of every wait for the database.
 * It only helps a transaction that asks for the write lock when it begins (`writeTransaction`): one that reads
 * first and writes later cannot wait, because its snapshot may already be stale, so SQLite refuses it at once.
 */
export const BUSY_TIMEOUT_MS = 5000;
/** `Retry-After` of the 503 answered when the database was still busy after BUSY_TIMEOUT_MS. */
export const BUSY_RETRY_AFTER_SECONDS = 1;

/** SQLITE_BUSY (another connection holds the lock past the bound) and SQLITE_LOCKED, with their extended codes. */
export function isDatabaseBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  if (code === 'DATABASE_BUSY') return true;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)(_|$)/.test(code);
}

/** The registered error for a database still busy after the bound; every HTTP surface answers it with 503. */
export function databaseBusyError(cause: unknown): GatewayError {
  return new GatewayError(
    'DATABASE_BUSY',
    `the database is busy (another connection held its lock for more than ${BUSY_TIMEOUT_MS / 1000} s); retry in ` +
      `${BUSY_RETRY_AFTER_SECONDS} s`,
    { cause },
  );
}

/**
 * `work` in one transaction that takes the write lock when it begins (`BEGIN IMMEDIATE`), waiting for it up to
 * BUSY_TIMEOUT_MS. Every transaction that may write uses it: a deferred one (`BEGIN`) that reads, then writes,
 * fails with SQLITE_BUSY at once when another connection wrote in between, whatever the busy timeout.
 */
export function writeTransaction<A extends unknown[], R>(database: SqliteDatabase, work: (...args: A) => R): (...args: A) => R {
  const transaction = database.transaction(work);
  return (...args: A) => transaction.immediate(...args);
}

/**
 * SQLite's page cache of the gateway's connection, in KiB: SQLite's own default. better-sqlite3 builds SQLite with
 * 16,000 KiB per connection, which the gateway's cache filled as receipts were written. The gateway reads rows by
 * key and appends, so 2 MB holds the hot pages; the operating system caches the file itself (figures:
 * docs/performance.md, "SQLite page cache of 2 MB").
 */
export const PAGE_CACHE_KIB = 2000;

export type { Migration };

/**
 * Opens (creating if needed) the gateway's SQLite database in WAL mode and applies pending migrations,
 * each in its own transaction, recording them in `schema_migrations`. Secrets never go in here.
 */
export function openDatabase(path: string, migrations: readonly Migration[], options: { busyTimeoutMs?: number } = {}): SqliteDatabase {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  // The busy timeout is set when the connection opens, before the first pragma (switching to WAL takes a lock).
  const database = new Database(path, { timeout: options.busyTimeoutMs ?? BUSY_TIMEOUT_MS });
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  database.exec('CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
  const applied = new Set((database.prepare('SELECT id FROM schema_migrations').all() as Array<{ id: string }>).map((row) => row.id));
  const record = database.prepare('INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)');
  for (const migration of [...migrations].sort((a, b) => compareText(a.id, b.id))) {
    if (applied.has(migration.id)) continue;
    writeTransaction(database, () => {
      database.exec(migration.sql);
      record.run(migration.id, new Date().toISOString());
    })();
  }
  return database;
}
