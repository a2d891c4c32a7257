import type { Receipt } from '@gateway/core';
import type { Transaction } from '../store/unit-of-work.js';
import type { JournalMark, ReceiptDraft, ReceiptHook, ReceiptStorage, StoredCheckpoint, TreeHead } from './store.js';

export interface ReceiptWriter {
  /**
   * Appends receipts, their journal mark and what the hooks write for each (`onReceipt`) in one unit of work;
   * once it has committed, the hooks hear of them (`afterCommit`). All or nothing.
   */
  append(drafts: readonly ReceiptDraft[], mark?: JournalMark): Promise<Receipt[]>;
  /**
   * The same, with what is appended taken when the unit of work begins (`take` runs first in it): a batch then
   * holds every receipt queued until the transaction began, none recorded meanwhile is left behind.
   */
  appendTaken(take: () => { drafts: readonly ReceiptDraft[]; mark?: JournalMark }): Promise<Receipt[]>;
  /** Records a journal mark alone: the entries up to it are given up (they cannot be written). */
  giveUp(mark: JournalMark): Promise<void>;
  /**
   * Signs and stores a checkpoint in one unit of work: `sign` gets the tree head in it (serialised with every
   * append and every other process's checkpoint, so what it checks and signs is the tree stored now), and what it
   * returns is stored in it, with what the hooks (`onCheckpoint`) write when the checkpoint is new. Returns it
   * (undefined when `sign` declined).
   */
  addCheckpoint(sign: (tx: Transaction, head: TreeHead) => Promise<StoredCheckpoint | undefined>): Promise<StoredCheckpoint | undefined>;
}

/**
 * The receipt log's writes, each one unit of work. A hook that writes synchronously (the SQLite outbox) is not
 * awaited: no extra turn of the microtask queue per receipt.
 */
export function createReceiptWriter(storage: ReceiptStorage, hooks: readonly ReceiptHook[]): ReceiptWriter {
  const { store, unitOfWork } = storage;
  async function appendTaken(take: () => { drafts: readonly ReceiptDraft[]; mark?: JournalMark }): Promise<Receipt[]> {
    let written: Transaction | undefined;
    const receipts = await unitOfWork.run(async (tx) => {
      written = tx;
      const { drafts, mark } = take();
      const appended = await store.append(tx, drafts, mark);
      for (const receipt of appended) {
        for (const hook of hooks) {
          const written = hook.onReceipt(receipt, tx);
          if (written) await written;
        }
      }
      return appended;
    });
    for (const hook of hooks) hook.afterCommit?.(receipts, written!);
    return receipts;
  }
  return {
    append: (drafts, mark) => appendTaken(() => ({ drafts, ...(mark ? { mark } : {}) })),
    appendTaken,
    giveUp: (mark) => unitOfWork.run((tx) => store.setJournalMark(tx, mark)),
    addCheckpoint: async (sign) => {
      let stored: Transaction | undefined;
      const checkpoint = await unitOfWork.run(async (tx) => {
        const signed = await sign(tx, await store.head(tx));
        // Another process may have stored this tree size first: its hooks wrote the events.
        if (!signed || !(await store.addCheckpoint(tx, signed))) return signed;
        stored = tx;
        for (const hook of hooks) {
          const written = hook.onCheckpoint?.(signed, tx);
          if (written) await written;
        }
        return signed;
      });
      // The checkpoint's events are stored for good: the hooks hand them on now (no receipts came with them).
      if (stored) for (const hook of hooks) hook.afterCommit?.([], stored);
      return checkpoint;
    },
  };
}
