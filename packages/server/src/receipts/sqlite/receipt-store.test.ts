import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rootOf, type ReceiptOutcome } from '@gateway/core';
import { temporaryDirectory } from '../../../../../test-support/cli.js';
import { openDatabase, type SqliteDatabase } from '../../store/sqlite/database.js';
import type { ReceiptDraft, ReceiptHook, ReceiptStorage, ReceiptStore } from '../store.js';
import { createReceiptWriter } from '../writer.js';
import { EDGE_SNAPSHOT_EVERY, receiptMigrations, sqliteReceiptStorage } from './index.js';

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
function connect(): { database: SqliteDatabase; store: Appending } {
  const database = openDatabase(join(directory.path, 'gateway.db'), receiptMigrations);
  databases.push(database);
  return { database, store: appending(sqliteReceiptStorage(database)) };
}

/** The store with appends in a unit of work of their own, with `hooks`, as the receipt log writes them. */
type Appending = ReceiptStore & {
  appendOne(draft: ReceiptDraft, hooks: readonly ReceiptHook[]): Promise<{ id: string }>;
  appendBatch(drafts: readonly ReceiptDraft[], hooks: readonly ReceiptHook[]): Promise<Array<{ id: string }>>;
  storage: ReceiptStorage;
};
function appending(storage: ReceiptStorage): Appending {
  return Object.assign({}, storage.store, {
    storage,
    appendOne: async (one: ReceiptDraft, hooks: readonly ReceiptHook[]) => (await createReceiptWriter(storage, hooks).append([one]))[0]!,
    appendBatch: (drafts: readonly ReceiptDraft[], hooks: readonly ReceiptHook[]) => createReceiptWriter(storage, hooks).append(drafts),
  });
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
async function recomputedRoot(store: ReceiptStore): Promise<Buffer> {
  return rootOf(await store.leafHashes(Number.MAX_SAFE_INTEGER));
}

describe('the SQLite receipt store', () => {
  it('numbers leaves without gaps and keeps the root right when two processes append to one file in turn', async () => {
    const first = connect();
    const second = connect();
    const ids: string[] = [];
    for (let index = 0; index < 40; index += 1) {
      const { store } = index % 3 === 0 ? second : first;
      ids.push((await store.appendOne(draft(`tool_${index}`), [])).id);
    }
    expect(ids).toEqual(Array.from({ length: 40 }, (_, index) => `receipt-${index}`));
    // Each process folds in what the other appended: both see the same head, equal to the recomputed tree.
    const root = await recomputedRoot(first.store);
    expect(await first.store.head()).toEqual({ size: 40, rootHash: root });
    expect(await second.store.head()).toEqual({ size: 40, rootHash: root });
  });

  it('a process that is behind catches up in the middle of a batch, and a rollback after that forgets the catch-up', async () => {
    const first = connect();
    const second = connect();
    await second.store.appendOne(draft('seen_by_second'), []);
    for (let index = 0; index < 3; index += 1) await first.store.appendOne(draft(`first_${index}`), []);
    // The second process still believes the tree has 1 leaf: its number is taken, so it catches up in the
    // transaction and the batch gets receipt-4 and receipt-5.
    const batch = await second.store.appendBatch([draft('a'), draft('b')], []);
    expect(batch.map((receipt) => receipt.id)).toEqual(['receipt-4', 'receipt-5']);
    // Behind again, and this time the batch rolls back after catching up: nothing of it may stay in its view.
    await first.store.appendOne(draft('first_again'), []);
    let calls = 0;
    const failsOnSecond = {
      onReceipt() {
        calls += 1;
        if (calls === 2) throw new Error('outbox write failed');
      },
    };
    await expect(second.store.appendBatch([draft('c'), draft('d')], [failsOnSecond])).rejects.toThrow('outbox write failed');
    expect((await second.store.appendOne(draft('e'), [])).id).toBe('receipt-7');
    const root = await recomputedRoot(first.store);
    expect(await second.store.head()).toEqual({ size: 8, rootHash: root });
    expect(await first.store.head()).toEqual({ size: 8, rootHash: root });
  });

  it('a restarted process folds the leaves stored after the last edge snapshot into its tree', async () => {
    const before = connect();
    const total = EDGE_SNAPSHOT_EVERY + 37;
    // In one unit of work, as a start that moves a long journal does.
    await before.store.storage.unitOfWork.run(async (tx) => {
      for (let index = 0; index < total; index += 1) await before.store.append(tx, [draft(`tool_${index}`)]);
    });
    const snapshot = before.database.prepare('SELECT size FROM receipt_tree WHERE id = 1').pluck().get();
    expect(snapshot).toBe(EDGE_SNAPSHOT_EVERY);
    const after = connect();
    expect(await after.store.head()).toEqual({ size: total, rootHash: await recomputedRoot(after.store) });
    expect((await after.store.appendOne(draft('next'), [])).id).toBe(`receipt-${total}`);
    expect((await after.store.head()).rootHash).toEqual(await recomputedRoot(after.store));
  });

  it('a rolled-back append (a hook threw) leaves the tree as it was and its number unused', async () => {
    const { store } = connect();
    await store.appendOne(draft('first'), []);
    const head = await store.head();
    const failing = {
      onReceipt() {
        throw new Error('outbox write failed');
      },
    };
    await expect(store.appendOne(draft('second'), [failing])).rejects.toThrow('outbox write failed');
    expect(await store.head()).toEqual(head);
    expect((await store.appendOne(draft('third'), [])).id).toBe('receipt-1');
    expect(await store.head()).toEqual({ size: 2, rootHash: await recomputedRoot(store) });
  });

  it('leaves deleted from the end of the file do not give their numbers to new receipts', async () => {
    const { database, store } = connect();
    for (let index = 0; index < 5; index += 1) await store.appendOne(draft(`tool_${index}`), []);
    database.prepare('DELETE FROM receipts WHERE leaf_index >= 3').run();
    // The next receipt is receipt-5, so the two missing leaves stay a visible gap for `receipts verify`.
    expect((await store.appendOne(draft('after'), [])).id).toBe('receipt-5');
  });

  it('after a restart, leaves deleted below the last checkpoint still leave a gap instead of being renumbered', async () => {
    const before = connect();
    for (let index = 0; index < 5; index += 1) await before.store.appendOne(draft(`tool_${index}`), []);
    const head = await before.store.head();
    const checkpoint = { treeSize: head.size, rootHash: head.rootHash, note: 'note', verifierKey: 'key', createdAt: 'now' };
    await before.store.storage.unitOfWork.run((tx) => before.store.addCheckpoint(tx, checkpoint));
    before.database.prepare('DELETE FROM receipts WHERE leaf_index >= 3').run();
    const after = connect();
    expect((await after.store.head()).size).toBe(5);
    expect((await after.store.appendOne(draft('after'), [])).id).toBe('receipt-5');
  });
});
