import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rootOf, type ReceiptOutcome } from '@gateway/core';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { openDatabase, type SqliteDatabase } from '../store/sqlite/database.js';
import { receiptMigrations } from './migrations.js';
import { createSqliteReceiptStore, EDGE_SNAPSHOT_EVERY, type ReceiptDraft, type ReceiptStore } from './store.js';

let directory: { path: string; cleanup: () => Promise<void> };
let databases: SqliteDatabase[];

beforeEach(async () => {
  directory = await temporaryDirectory('gateway-receipt-store-');
  databases = [];
});

afterEach(async () => {
  for (const database of databases) database.close();
  await directory.cleanup();
});

/** A connection to the test's database file, as one gateway process (or `--workers` worker) opens it. */
function connect(): { database: SqliteDatabase; store: ReceiptStore } {
  const database = openDatabase(join(directory.path, 'gateway.db'), receiptMigrations);
  databases.push(database);
  return { database, store: createSqliteReceiptStore(database) };
}

function draft(tool: string, outcome: ReceiptOutcome = 'allowed'): ReceiptDraft {
  return {
    time: new Date().toISOString(),
    session: 'session-1',
    person: 'alice',
    clientId: 'client-1',
    tool,
    source: 'orders',
    publication: 'publication-1',
    fingerprint: 'sha256:abc',
    login: null,
    outcome,
    reason: null,
    upstreamStatus: 200,
    durationMs: 0.5,
    argumentsDigest: 'hmac-sha256:00',
    resultDigest: null,
  };
}

/** The root recomputed from every stored leaf hash (RFC 9162 MTH), independent of the store's edge. */
function recomputedRoot(store: ReceiptStore): Buffer {
  return rootOf(store.leafHashes(Number.MAX_SAFE_INTEGER));
}

describe('the SQLite receipt store', () => {
  it('numbers leaves without gaps and keeps the root right when two processes append to one file in turn', () => {
    const first = connect();
    const second = connect();
    const ids: string[] = [];
    for (let index = 0; index < 40; index += 1) {
      const { store } = index % 3 === 0 ? second : first;
      ids.push(store.append(draft(`tool_${index}`), []).id);
    }
    expect(ids).toEqual(Array.from({ length: 40 }, (_, index) => `receipt-${index}`));
    // Each process folds in what the other appended: both see the same head, equal to the recomputed tree.
    const root = recomputedRoot(first.store);
    expect(first.store.head()).toEqual({ size: 40, rootHash: root });
    expect(second.store.head()).toEqual({ size: 40, rootHash: root });
  });

  it('a process that is behind catches up in the middle of a batch, and a rollback after that forgets the catch-up', () => {
    const first = connect();
    const second = connect();
    second.store.append(draft('seen_by_second'), []);
    for (let index = 0; index < 3; index += 1) first.store.append(draft(`first_${index}`), []);
    // The second process still believes the tree has 1 leaf: its number is taken, so it catches up in the
    // transaction and the batch gets receipt-4 and receipt-5.
    const batch = second.store.appendBatch([draft('a'), draft('b')], []);
    expect(batch.map((receipt) => receipt.id)).toEqual(['receipt-4', 'receipt-5']);
    // Behind again, and this time the batch rolls back after catching up: nothing of it may stay in its view.
    first.store.append(draft('first_again'), []);
    let calls = 0;
    const failsOnSecond = {
      onReceipt() {
        calls += 1;
        if (calls === 2) throw new Error('outbox write failed');
      },
    };
    expect(() => second.store.appendBatch([draft('c'), draft('d')], [failsOnSecond])).toThrow('outbox write failed');
    expect(second.store.append(draft('e'), []).id).toBe('receipt-7');
    const root = recomputedRoot(first.store);
    expect(second.store.head()).toEqual({ size: 8, rootHash: root });
    expect(first.store.head()).toEqual({ size: 8, rootHash: root });
  });

  it('a restarted process folds the leaves stored after the last edge snapshot into its tree', () => {
    const before = connect();
    const total = EDGE_SNAPSHOT_EVERY + 37;
    before.database.transaction(() => {
      for (let index = 0; index < total; index += 1) before.store.append(draft(`tool_${index}`), []);
    })();
    const snapshot = before.database.prepare('SELECT size FROM receipt_tree WHERE id = 1').pluck().get();
    expect(snapshot).toBe(EDGE_SNAPSHOT_EVERY);
    const after = connect();
    expect(after.store.head()).toEqual({ size: total, rootHash: recomputedRoot(after.store) });
    expect(after.store.append(draft('next'), []).id).toBe(`receipt-${total}`);
    expect(after.store.head().rootHash).toEqual(recomputedRoot(after.store));
  });

  it('a rolled-back append (a hook threw) leaves the tree as it was and its number unused', () => {
    const { store } = connect();
    store.append(draft('first'), []);
    const head = store.head();
    const failing = {
      onReceipt() {
        throw new Error('outbox write failed');
      },
    };
    expect(() => store.append(draft('second'), [failing])).toThrow('outbox write failed');
    expect(store.head()).toEqual(head);
    expect(store.append(draft('third'), []).id).toBe('receipt-1');
    expect(store.head()).toEqual({ size: 2, rootHash: recomputedRoot(store) });
  });

  it('leaves deleted from the end of the file do not give their numbers to new receipts', () => {
    const { database, store } = connect();
    for (let index = 0; index < 5; index += 1) store.append(draft(`tool_${index}`), []);
    database.prepare('DELETE FROM receipts WHERE leaf_index >= 3').run();
    // The next receipt is receipt-5, so the two missing leaves stay a visible gap for `receipts verify`.
    expect(store.append(draft('after'), []).id).toBe('receipt-5');
  });

  it('after a restart, leaves deleted below the last checkpoint still leave a gap instead of being renumbered', () => {
    const before = connect();
    for (let index = 0; index < 5; index += 1) before.store.append(draft(`tool_${index}`), []);
    const head = before.store.head();
    before.store.addCheckpoint({ treeSize: head.size, rootHash: head.rootHash, note: 'note', verifierKey: 'key', createdAt: 'now' });
    before.database.prepare('DELETE FROM receipts WHERE leaf_index >= 3').run();
    const after = connect();
    expect(after.store.head().size).toBe(5);
    expect(after.store.append(draft('after'), []).id).toBe('receipt-5');
  });
});
