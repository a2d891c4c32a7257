import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/webhook-receiver.js';
import { startBackgroundCheckpointer, WAL_SIZE_LIMIT_BYTES } from './checkpointer.js';
import { openDatabase } from './database.js';

describe('background WAL checkpoints', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('commits on the main connection never checkpoint; a thread copies the WAL into the database file', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-checkpointer-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const path = join(directory, 'gateway.db');
    const database = openDatabase(path, [{ id: 'test-001', sql: 'CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)' }]);
    cleanups.push(() => database.close());
    const checkpointer = startBackgroundCheckpointer(database, path);
    await waitFor(() => database.pragma('wal_autocheckpoint', { simple: true }) === 0, 'the thread to take over checkpoints');
    expect(database.pragma('journal_size_limit', { simple: true })).toBe(WAL_SIZE_LIMIT_BYTES);

    const sizeBefore = statSync(path).size;
    const insert = database.prepare('INSERT INTO rows (body) VALUES (?)');
    // 3,000 commits of 1 KB: about 3 MB of pages, well past SQLite's own 1,000-page checkpoint threshold.
    for (let index = 0; index < 3_000; index += 1) insert.run('x'.repeat(1_000));
    // Only a checkpoint writes the database file in WAL mode; the main connection no longer runs any.
    await waitFor(() => statSync(path).size > sizeBefore + 2_000_000, 'the thread to checkpoint the WAL into the database file', 10_000);

    await checkpointer.stop();
    expect(database.prepare('SELECT COUNT(*) FROM rows').pluck().get()).toBe(3_000);
  });

  it('when the thread cannot open the database, commits checkpoint on their own again', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-checkpointer-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const database = openDatabase(join(directory, 'gateway.db'), []);
    cleanups.push(() => database.close());
    const warnings: string[] = [];
    const checkpointer = startBackgroundCheckpointer(database, join(directory, 'missing.db'), (message) => warnings.push(message));
    await waitFor(() => warnings.length > 0, 'the warning');
    await checkpointer.stop();
    expect(warnings[0]).toContain('background WAL checkpoint failed');
    expect(database.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
  });
});
