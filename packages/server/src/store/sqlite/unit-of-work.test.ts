import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isDatabaseBusy, openDatabase, writeTransaction, type SqliteDatabase } from './database.js';
import { createSqliteUnitOfWork, isUnitOfWorkOpen, sqliteTransactionOf } from './unit-of-work.js';

const MIGRATIONS = [{ id: 'test-001', sql: 'CREATE TABLE things (name TEXT NOT NULL)' }];

describe('the SQLite unit of work', () => {
  let directory: string;
  let databases: SqliteDatabase[];
  const open = (options: { busyTimeoutMs?: number } = {}) => {
    const database = openDatabase(join(directory, 'gateway.db'), MIGRATIONS, options);
    databases.push(database);
    return database;
  };
  const names = (database: SqliteDatabase) => database.prepare('SELECT name FROM things ORDER BY rowid').pluck().all();
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'gateway-uow-'));
    databases = [];
  });
  afterEach(() => {
    for (const database of databases) database.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('commits what the work wrote when it resolves, and rolls all of it back when it rejects', async () => {
    const database = open();
    const unitOfWork = createSqliteUnitOfWork(database);
    const insert = database.prepare('INSERT INTO things (name) VALUES (?)');
    expect(await unitOfWork.run(async () => insert.run('kept').changes)).toBe(1);
    await expect(
      unitOfWork.run(async () => {
        insert.run('lost_1');
        await Promise.resolve();
        insert.run('lost_2');
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(names(database)).toEqual(['kept']);
    expect(database.inTransaction).toBe(false);
  });

  it('runs units of work one at a time, in the order they were asked for, also when built twice over one connection', async () => {
    const database = open();
    const units = [createSqliteUnitOfWork(database), createSqliteUnitOfWork(database)];
    const events: string[] = [];
    await Promise.all(
      [0, 1, 2, 3].map((index) =>
        units[index % 2]!.run(async () => {
          events.push(`begin ${index}`);
          await Promise.resolve();
          await Promise.resolve();
          events.push(`end ${index}`);
        }),
      ),
    );
    expect(events).toEqual(['begin 0', 'end 0', 'begin 1', 'end 1', 'begin 2', 'end 2', 'begin 3', 'end 3']);
  });

  it('a write that is not in the unit of work cannot slip into it: callbacks queued around it write after it ends', async () => {
    const database = open();
    const unitOfWork = createSqliteUnitOfWork(database);
    const outside = writeTransaction(database, (name: string) => {
      // Whoever writes outside a unit of work finds none open: its write is its own transaction.
      expect(isUnitOfWorkOpen(database)).toBe(false);
      database.prepare('INSERT INTO things (name) VALUES (?)').run(name);
    });
    // Queued before, and while, the unit of work runs: microtasks, an immediate, a timer, a file read.
    void Promise.resolve().then(() => outside('microtask before'));
    setImmediate(() => outside('immediate'));
    setTimeout(() => outside('timer'), 0);
    const read = readFile(join(directory, 'gateway.db')).then(() => outside('file read'));
    const unit = unitOfWork.run(async () => {
      database.prepare('INSERT INTO things (name) VALUES (?)').run('in the unit');
      for (let turn = 0; turn < 20; turn += 1) await Promise.resolve();
      throw new Error('rolled back');
    });
    void Promise.resolve().then(() => outside('microtask after'));
    await expect(unit).rejects.toThrow('rolled back');
    await read;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect([...names(database)].sort()).toEqual(['file read', 'immediate', 'microtask after', 'microtask before', 'timer']);
  });

  it('refuses a work that waits for the event loop (something else could write meanwhile): rolled back', async () => {
    const database = open();
    const unitOfWork = createSqliteUnitOfWork(database);
    const unit = unitOfWork.run(async () => {
      database.prepare('INSERT INTO things (name) VALUES (?)').run('waited');
      await new Promise((resolve) => setImmediate(resolve));
    });
    await expect(unit).rejects.toThrow('waited for the event loop');
    const timed = unitOfWork.run(async () => {
      database.prepare('INSERT INTO things (name) VALUES (?)').run('waited');
      await new Promise((resolve) => setTimeout(resolve, 5));
    });
    await expect(timed).rejects.toThrow('waited for the event loop');
    expect(names(database)).toEqual([]);
  });

  it('calls afterCommit callbacks after a commit only, and a transaction is refused once ended or on another connection', async () => {
    const database = open();
    const other = open();
    const unitOfWork = createSqliteUnitOfWork(database);
    const heard: string[] = [];
    const kept = await unitOfWork.run(async (tx) => {
      sqliteTransactionOf(tx, database).afterCommit(() => heard.push('committed'));
      expect(() => sqliteTransactionOf(tx, other)).toThrow('another connection');
      return tx;
    });
    await expect(
      unitOfWork.run(async (tx) => {
        sqliteTransactionOf(tx, database).afterCommit(() => heard.push('rolled back'));
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect(heard).toEqual(['committed']);
    expect(() => sqliteTransactionOf(kept, database)).toThrow('has ended');
  });

  it('waits for a write lock another connection holds up to the busy timeout, then rejects as busy (DATABASE_BUSY)', async () => {
    const database = open({ busyTimeoutMs: 200 });
    const holder = open();
    holder.prepare('BEGIN IMMEDIATE').run();
    const started = Date.now();
    const error = await createSqliteUnitOfWork(database)
      .run(async () => 'never')
      .catch((caught: unknown) => caught);
    expect(isDatabaseBusy(error)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    holder.prepare('ROLLBACK').run();
    // The queue goes on after a unit of work that could not begin.
    expect(await createSqliteUnitOfWork(database).run(async () => 'next')).toBe('next');
  });
});
