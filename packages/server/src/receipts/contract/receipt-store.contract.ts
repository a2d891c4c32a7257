import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { leafHash, rootOf, type Receipt } from '@gateway/core';
import type { ReceiptDraft, ReceiptStorage, StoredCheckpoint } from '../store.js';
import { draft, type ReceiptStorageFactory, type ReceiptStorageUnderTest } from './harness.js';

const ids = (receipts: readonly Receipt[]) => receipts.map((receipt) => receipt.id);
const numbered = (from: number, count: number) => Array.from({ length: count }, (_, offset) => `receipt-${from + offset}`);

/** Appends in a unit of work of its own, as the receipt log does. */
function append(storage: ReceiptStorage, drafts: readonly ReceiptDraft[], mark?: { journal: string; seq: number }): Promise<Receipt[]> {
  return storage.unitOfWork.run((tx) => storage.store.append(tx, drafts, mark));
}

/** The root recomputed from every stored leaf hash (RFC 9162 MTH), independent of how the store keeps its tree. */
async function recomputedRoot(storage: ReceiptStorage): Promise<Buffer> {
  return rootOf(await storage.store.leafHashes(Number.MAX_SAFE_INTEGER));
}

function checkpointOf(size: number, rootHash: Buffer, note = `note of ${size}`): StoredCheckpoint {
  return { treeSize: size, rootHash, note, verifierKey: 'gateway+00000000+key', createdAt: '2026-01-01T00:00:00.000Z' };
}

/** The rules of the `ReceiptStore` port (../store.ts) with its unit of work, for any adapter. */
export function receiptStoreContract(adapter: string, factory: ReceiptStorageFactory): void {
  describe(`ReceiptStore (${adapter})`, () => {
    let underTest: ReceiptStorageUnderTest;
    let first: ReceiptStorage;
    let second: ReceiptStorage;
    beforeEach(async () => {
      underTest = await factory();
      first = await underTest.connect();
      second = await underTest.connect();
    });
    afterEach(() => underTest.close());

    it('numbers receipts receipt-0, receipt-1, … in one unit of work or several, and the head is the tree of their leaves', async () => {
      expect(await first.store.head()).toEqual({ size: 0, rootHash: rootOf([]) });
      expect(ids(await append(first, [draft('a')]))).toEqual(['receipt-0']);
      expect(ids(await append(first, [draft('b'), draft('c')]))).toEqual(['receipt-1', 'receipt-2']);
      // Two appends in one unit of work: the second goes on from the first; the head in it counts both.
      const inOne = await first.unitOfWork.run(async (tx) => {
        const appended = [...(await first.store.append(tx, [draft('d')])), ...(await first.store.append(tx, [draft('e')]))];
        expect((await first.store.head(tx)).size).toBe(5);
        return appended;
      });
      expect(ids(inOne)).toEqual(['receipt-3', 'receipt-4']);
      expect(inOne[0]).toMatchObject({ ...draft('d'), id: 'receipt-3', index: 3 });
      expect(await first.store.head()).toEqual({ size: 5, rootHash: await recomputedRoot(first) });
    });

    it('numbers gap-free and keeps one tree when two writers sharing the database append in turn and at once', async () => {
      const inTurn: string[] = [];
      for (let index = 0; index < 12; index += 1)
        inTurn.push(...ids(await append(index % 3 === 0 ? second : first, [draft(`turn_${index}`)])));
      expect(inTurn).toEqual(numbered(0, 12));
      const atOnce = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          append(index % 2 === 0 ? first : second, [draft(`once_${index}`), draft(`once_${index}b`)]),
        ),
      );
      const indices = atOnce.flat().map((receipt) => receipt.index);
      expect([...indices].sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, offset) => 12 + offset));
      // Each unit of work's receipts are consecutive: a batch is never split by the other writer.
      for (const batch of atOnce) expect(batch[1]!.index).toBe(batch[0]!.index + 1);
      const root = await recomputedRoot(first);
      expect(await first.store.head()).toEqual({ size: 52, rootHash: root });
      expect(await second.store.head()).toEqual({ size: 52, rootHash: root });
      const listed = await first.store.list({ limit: 100 });
      expect(ids(listed)).toEqual(numbered(0, 52));
    });

    it('a rolled-back append leaves no trace: no row, no mark, the head as it was, its number given to the next receipt', async () => {
      await append(first, [draft('kept')], { journal: 'main', seq: 1 });
      const head = await first.store.head();
      // Behind the other writer first, so the rolled-back unit of work had to catch up before it appended.
      await append(second, [draft('by_second')]);
      const failure = first.unitOfWork.run(async (tx) => {
        await first.store.append(tx, [draft('lost_1'), draft('lost_2')], { journal: 'main', seq: 3 });
        throw new Error('a hook refused it');
      });
      await expect(failure).rejects.toThrow('a hook refused it');
      expect(await first.store.journalMark('main')).toBe(1);
      expect(await first.store.get(2)).toBeUndefined();
      expect((await first.store.list({ limit: 10 })).map((receipt) => receipt.tool)).toEqual(['kept', 'by_second']);
      expect((await first.store.head()).size).toBe(head.size + 1);
      expect(ids(await append(first, [draft('next')]))).toEqual(['receipt-2']);
      expect(ids(await append(second, [draft('after')]))).toEqual(['receipt-3']);
      const root = await recomputedRoot(first);
      expect(await first.store.head()).toEqual({ size: 4, rootHash: root });
      expect(await second.store.head()).toEqual({ size: 4, rootHash: root });
    });

    it('records journal marks with the receipts they come up to, or alone, per journal', async () => {
      expect(await first.store.journalMark('main')).toBe(0);
      await append(first, [draft('a'), draft('b')], { journal: 'main', seq: 2 });
      await append(second, [draft('c')], { journal: 'worker-2', seq: 7 });
      expect(await first.store.journalMark('main')).toBe(2);
      expect(await first.store.journalMark('worker-2')).toBe(7);
      await first.unitOfWork.run((tx) => first.store.setJournalMark(tx, { journal: 'main', seq: 3 }));
      expect(await second.store.journalMark('main')).toBe(3);
      await expect(
        first.unitOfWork.run(async (tx) => {
          await first.store.setJournalMark(tx, { journal: 'main', seq: 9 });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await first.store.journalMark('main')).toBe(3);
    });

    it('stores a checkpoint once per tree size (false for a second one), in order, and not when rolled back', async () => {
      await append(first, [draft('a'), draft('b')]);
      const head = await first.store.head();
      expect(await first.store.latestCheckpoint()).toBeUndefined();
      expect(await first.unitOfWork.run((tx) => first.store.addCheckpoint(tx, checkpointOf(2, head.rootHash)))).toBe(true);
      // Another writer signed the same tree meanwhile: nothing is written, its row stays.
      expect(await second.unitOfWork.run((tx) => second.store.addCheckpoint(tx, checkpointOf(2, head.rootHash, 'other')))).toBe(false);
      await append(second, [draft('c')]);
      const later = await second.store.head();
      await expect(
        second.unitOfWork.run(async (tx) => {
          await second.store.addCheckpoint(tx, checkpointOf(3, later.rootHash));
          expect((await second.store.latestCheckpoint(tx))?.treeSize).toBe(3);
          throw new Error('a hook refused it');
        }),
      ).rejects.toThrow('a hook refused it');
      expect((await first.store.latestCheckpoint())?.treeSize).toBe(2);
      await second.unitOfWork.run((tx) => second.store.addCheckpoint(tx, checkpointOf(3, later.rootHash)));
      expect(await first.store.checkpoints()).toEqual([checkpointOf(2, head.rootHash), checkpointOf(3, later.rootHash)]);
      expect(await first.store.latestCheckpoint()).toEqual(checkpointOf(3, later.rootHash));
    });

    it('lists by session, tool, person, outcome and time, in leaf order, a page at a time', async () => {
      await append(first, [
        draft('get_order', { time: '2026-01-01T10:00:00.000Z' }),
        draft('get_order', { time: '2026-01-01T11:00:00.000Z', person: 'bob', session: 'session-2', outcome: 'denied' }),
        draft('list_orders', { time: '2026-01-01T12:00:00.000Z', outcome: 'error' }),
        draft('get_order', { time: '2026-01-01T13:00:00.000Z' }),
      ]);
      const listed = async (filter: Parameters<ReceiptStorage['store']['list']>[0]) => ids(await first.store.list(filter));
      expect(await listed({ tool: 'get_order', limit: 10 })).toEqual(['receipt-0', 'receipt-1', 'receipt-3']);
      expect(await listed({ person: 'bob', limit: 10 })).toEqual(['receipt-1']);
      expect(await listed({ session: 'session-1', limit: 10 })).toEqual(['receipt-0', 'receipt-2', 'receipt-3']);
      expect(await listed({ outcome: 'error', limit: 10 })).toEqual(['receipt-2']);
      expect(await listed({ since: '2026-01-01T11:00:00.000Z', until: '2026-01-01T12:00:00.000Z', limit: 10 })).toEqual([
        'receipt-1',
        'receipt-2',
      ]);
      expect(await listed({ tool: 'get_order', limit: 2 })).toEqual(['receipt-0', 'receipt-1']);
      expect(await listed({ tool: 'get_order', afterIndex: 1, limit: 2 })).toEqual(['receipt-3']);
      expect(await first.store.get(2)).toMatchObject({ id: 'receipt-2', tool: 'list_orders', outcome: 'error' });
      expect(await first.store.get(4)).toBeUndefined();
    });

    it('keeps each leaf as hashed: its bytes, its recorded hash and its filter columns, read in leaf order', async () => {
      const receipts = await append(first, [draft('a'), draft('b', { person: null, session: null }), draft('c')]);
      const rows = await first.store.rows(1, 10);
      expect(rows.map((row) => row.index)).toEqual([1, 2]);
      for (const row of rows) {
        expect(JSON.parse(row.body)).toEqual(receipts[row.index]);
        expect(row.leafHash).toEqual(leafHash(row.body));
      }
      expect(rows[0]!.columns).toEqual({ time: '2026-01-01T00:00:00.000Z', session: null, person: null, tool: 'b', outcome: 'allowed' });
      const hashes = await first.store.leafHashes(3);
      expect(hashes).toEqual((await first.store.rows(0, 3)).map((row) => row.leafHash));
      expect(await first.store.leafHashes(2)).toEqual(hashes.slice(0, 2));
      expect(await first.store.leafHashesBetween(1, 3)).toEqual(hashes.slice(1, 3));
      expect(await first.store.leafHashesBetween(2, 9)).toEqual(hashes.slice(2));
      expect((await first.store.head()).rootHash).toEqual(rootOf(hashes));
    });

    it('refuses a transaction of another connection', async () => {
      await expect(first.unitOfWork.run((tx) => second.store.append(tx, [draft('a')]))).rejects.toThrow();
      expect((await first.store.head()).size).toBe(0);
    });
  });
}
