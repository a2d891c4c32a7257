/**
 * Checkpoint signing: a signed checkpoint of the receipt tree every N receipts (right after the commit that
 * reaches N) and every T seconds with new receipts, each over a tree checked against the anchor (anchor.ts) in
 * the unit of work that stores it, and a final one at close.
 */
import { formatCheckpoint, signNote } from '@gateway/core';
import { checkAgainstAnchor, type ReceiptAnchor, type VerifiedTree } from './anchor.js';
import type { ReceiptKeys } from './keys.js';
import type { ReceiptStore, StoredCheckpoint } from './store.js';
import type { ReceiptWriter } from './writer.js';

export interface Checkpointing {
  /** Signs a checkpoint of the current tree when it grew since the last one; resolves with the latest. */
  checkpoint(): Promise<StoredCheckpoint | undefined>;
  /** Signs one when `lastIndex` (the last receipt committed) reaches N receipts past the last; never rejects. */
  checkpointWhenDue(lastIndex: number): Promise<void>;
  /** Stops the timer and signs a final checkpoint; never rejects. */
  close(): Promise<void>;
}

export async function startCheckpointing(options: {
  store: ReceiptStore;
  writer: ReceiptWriter;
  keys: ReceiptKeys;
  anchor: ReceiptAnchor;
  everyReceipts: number;
  everySeconds: number;
  warn: (message: string) => void;
  now: () => Date;
}): Promise<Checkpointing> {
  const { store, writer, keys, anchor, everyReceipts, warn } = options;
  // Before anything is moved in or signed: the database must extend the last signed checkpoint (anchor.ts).
  // Throws RECEIPTS_ANCHOR_MISMATCH, which stops `serve`.
  let verified: VerifiedTree = await checkAgainstAnchor(store, undefined, { size: 0, edge: [] }, anchor.latest(), await store.head());
  // From the anchor, not the database's rows: a forged checkpoint row of a huge size must not stop the signing.
  let checkpointedSize = anchor.latest()?.treeSize ?? 0;

  async function checkpoint(): Promise<StoredCheckpoint | undefined> {
    const head = await store.head();
    if (head.size === 0 || head.size <= checkpointedSize) return store.latestCheckpoint();
    // In the unit of work: the tree checked is the tree signed, and processes of `--workers` take turns (each
    // reads the anchor the last one wrote). Signed only when consistent with the anchor.
    const stored = await writer.addCheckpoint(async (tx, tree) => {
      const latest = anchor.latest();
      if (tree.size === 0 || tree.size <= checkpointedSize) return undefined;
      // Another process of `--workers` signed and stored this very tree already (its hooks wrote the events). An
      // anchor without its row (that unit of work rolled back after the anchor was written: a hook failed) is
      // signed again: the same key signs the same note (Ed25519 is deterministic), now stored with its events.
      if (
        latest &&
        latest.treeSize === tree.size &&
        latest.rootHash.equals(tree.rootHash) &&
        (await store.latestCheckpoint(tx))?.treeSize === tree.size
      ) {
        return undefined;
      }
      verified = await checkAgainstAnchor(store, tx, verified, latest, tree);
      const note = signNote(
        formatCheckpoint({ origin: keys.origin, size: tree.size, rootHash: tree.rootHash }),
        keys.origin,
        keys.signingKey,
      );
      // Outside the database first: once this returns, no start accepts a database that does not extend it.
      anchor.record({ treeSize: tree.size, rootHash: tree.rootHash, note, edge: verified.edge });
      return { treeSize: tree.size, rootHash: tree.rootHash, note, verifierKey: keys.verifierKey, createdAt: options.now().toISOString() };
    });
    checkpointedSize = Math.max(checkpointedSize, stored?.treeSize ?? anchor.latest()?.treeSize ?? 0);
    return stored ?? store.latestCheckpoint();
  }

  const checkpointOrWarn = async (what: string) => {
    try {
      await checkpoint();
    } catch (error) {
      // The receipts are written; the next checkpoint (N receipts or T seconds on) covers them.
      warn(`${what} failed: ${(error as Error).message}`);
    }
  };
  // Every T seconds with new receipts; unref'd so the timer never keeps the process alive.
  const timer = setInterval(() => void checkpointOrWarn('receipt checkpoint'), Math.round(options.everySeconds * 1000));
  timer.unref();

  return {
    checkpoint,
    async checkpointWhenDue(lastIndex) {
      if (lastIndex + 1 - checkpointedSize < everyReceipts) return;
      await checkpointOrWarn('receipt checkpoint');
    },
    async close() {
      clearInterval(timer);
      await checkpointOrWarn('final receipt checkpoint');
    },
  };
}
