import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { PAGE_CACHE_KIB, openDatabase } from './database.js';

describe('store database', () => {
  const directories: string[] = [];
  afterEach(() => {
    for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
  });

  it('applies each migration once, in id order, in WAL mode', () => {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-db-'));
    directories.push(directory);
    const path = join(directory, 'state', 'gateway.db');
    const migrations = [
      { id: 'test-002', sql: "INSERT INTO things (name) VALUES ('second')" },
      { id: 'test-001', sql: 'CREATE TABLE things (name TEXT)' },
    ];
    const first = openDatabase(path, migrations);
    expect(first.pragma('journal_mode', { simple: true })).toBe('wal');
    first.close();
    const second = openDatabase(path, migrations);
    expect(second.prepare('SELECT name FROM things').all()).toEqual([{ name: 'second' }]);
    second.close();
  });

  it("caches at most SQLite's default 2,000 KiB of pages per connection, not better-sqlite3's 16,000", () => {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-db-'));
    directories.push(directory);
    const path = join(directory, 'gateway.db');
    const database = openDatabase(path, []);
    // A plain connection shows what the gateway would otherwise get (negative: KiB rather than pages).
    const plain = new Database(path);
    try {
      expect(PAGE_CACHE_KIB).toBe(2000);
      expect(database.pragma('cache_size', { simple: true })).toBe(-PAGE_CACHE_KIB);
      expect(plain.pragma('cache_size', { simple: true })).toBe(-16000);
    } finally {
      plain.close();
      database.close();
    }
  });

  it('rolls back a failing migration entirely', () => {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-db-'));
    directories.push(directory);
    const path = join(directory, 'gateway.db');
    expect(() => openDatabase(path, [{ id: 'bad-001', sql: 'CREATE TABLE t (x); INSERT INTO missing VALUES (1);' }])).toThrow();
    const database = openDatabase(path, []);
    expect(database.prepare("SELECT name FROM sqlite_master WHERE name = 't'").all()).toEqual([]);
    expect(database.prepare('SELECT id FROM schema_migrations').all()).toEqual([]);
    database.close();
  });
});
