import { setTimeout as sleep } from 'node:timers/promises';
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
  /**
   * `append` of receipts of calls that have run, with no journal to keep them meanwhile: a unit of work the database
   * refused for a reason that passes (`UnitOfWork.isRetryable`: a serialisation failure, a cut connection, nothing
   * written) runs again after each of RECEIPT_COMMIT_RETRY_DELAYS_MS, `onRetry` told first; any other error, or the
   * last, rejects.
   */
  appendRetrying(drafts: readonly ReceiptDraft[], onRetry: (error: unknown, retry: number, delayMs: number) => void): Promise<Receipt[]>;
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
 * The waits before each new try of a receipt's unit of work the database refused for a passing reason (about 1.3 s
 * in all): long enough for a deadlock's other side to commit or a pool to reconnect, short enough that the call
 * still answers.
 */
export const RECEIPT_COMMIT_RETRY_DELAYS_MS: readonly number[] = [50, 250, 1000];

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
  const append = (drafts: readonly ReceiptDraft[], mark?: JournalMark) => appendTaken(() => ({ drafts, ...(mark ? { mark } : {}) }));
  return {
    append,
    appendTaken,
    appendRetrying: async (drafts, onRetry) => {
      for (let retry = 0; ; retry += 1) {
        try {
          return await append(drafts);
        } catch (error) {
          const delayMs = RECEIPT_COMMIT_RETRY_DELAYS_MS[retry];
          if (delayMs === undefined || !unitOfWork.isRetryable?.(error)) throw error;
          onRetry(error, retry + 1, delayMs);
          await sleep(delayMs);
        }
      }
    },
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
