import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { compareText } from '@gateway/core';

export type SqliteDatabase = Database.Database;

/**
 * SQLite's page cache of the gateway's connection, in KiB: SQLite's own default. better-sqlite3 builds SQLite with
 * 16,000 KiB per connection, and the gateway's cache filled towards that as receipts were written: RSS climbed
 * 15–20 MB over 30,000 calls, then stayed there (bench/memory.mjs). The gateway reads rows by key and appends, so
 * 2 MB holds the hot pages (the same CPU per call in the bench); the operating system caches the file itself.
 */
export const PAGE_CACHE_KIB = 2000;

/** One schema change. Ids sort in application order; each area owns its own prefix (`drift-001`, `oauth-001`). */
export interface Migration {
  id: string;
  sql: string;
}

/**
 * Opens (creating if needed) the gateway's SQLite database in WAL mode and applies pending migrations,
 * each in its own transaction, recording them in `schema_migrations`. Secrets never go in here.
 */
export function openDatabase(path: string, migrations: readonly Migration[]): SqliteDatabase {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const database = new Database(path);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  database.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  database.exec('CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
  const applied = new Set((database.prepare('SELECT id FROM schema_migrations').all() as Array<{ id: string }>).map((row) => row.id));
  const record = database.prepare('INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)');
  for (const migration of [...migrations].sort((a, b) => compareText(a.id, b.id))) {
    if (applied.has(migration.id)) continue;
    database.transaction(() => {
      database.exec(migration.sql);
      record.run(migration.id, new Date().toISOString());
    })();
  }
  return database;
}
