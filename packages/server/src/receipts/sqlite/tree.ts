import { appendToEdge, leafHash, receiptLeafText, receiptOf, type Receipt } from '@gateway/core';
import type { SqliteDatabase } from '../../store/sqlite/database.js';
import type { ReceiptDraft } from '../store.js';

const HASH_BYTES = 32;

/** A tree as the store keeps it: its size and right edge (what the root is computed from). */
export type Tree = { size: number; edge: Buffer[] };

/** How often (in leaves) an append also stores the tree's right edge, bounding what a start must fold in. */
export const EDGE_SNAPSHOT_EVERY = 1024;

function edgeOf(blob: Buffer): Buffer[] {
  const edge: Buffer[] = [];
  for (let offset = 0; offset < blob.length; offset += HASH_BYTES) edge.push(blob.subarray(offset, offset + HASH_BYTES));
  return edge;
}

/**
 * The Merkle tree over the stored leaves, as this connection knows it. The right edge lives in memory and is
 * caught up from the leaves that other processes appended meanwhile; `receipt_tree` holds a snapshot of it (size
 * and edge), written with each checkpoint and every EDGE_SNAPSHOT_EVERY leaves inside an append, so a start folds
 * in at most that many leaf hashes. An append therefore writes one row, not two (about a third of the commit's
 * cost).
 */
export function createTreeKeeper(database: SqliteDatabase) {
  // Prepared once: an append is one insert in its transaction, no await (the /mcp fast path pays it).
  const readTree = database.prepare('SELECT size, edge FROM receipt_tree WHERE id = 1');
  const writeTree = database.prepare('UPDATE receipt_tree SET size = ?, edge = ? WHERE id = 1');
  const selectLastIndex = database.prepare('SELECT leaf_index FROM receipts ORDER BY leaf_index DESC LIMIT 1').pluck();
  const selectHashesFrom = database.prepare('SELECT leaf_hash FROM receipts WHERE leaf_index >= ? ORDER BY leaf_index').pluck();
  const insert = database.prepare(
    'INSERT INTO receipts (leaf_index, time, session, person, tool, outcome, body, leaf_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );

  /** This connection's view of the committed tree: size and right edge, never behind what it has appended itself. */
  let committed: Tree | undefined;

  /**
   * `tree` with the leaves stored above it folded in (those another process appended since this one last
   * looked). A stored size below `tree.size` (leaves deleted from the file) keeps the larger size, so the next
   * leaf does not reuse a deleted leaf's number and `receipts verify` names the missing one. Pure: the caller
   * decides whether the result is committed state.
   */
  function foldStored(tree: Tree): Tree {
    const last = selectLastIndex.get() as number | undefined;
    const storedSize = last === undefined ? 0 : last + 1;
    if (storedSize <= tree.size) return tree;
    let { size, edge } = tree;
    for (const hash of selectHashesFrom.all(size) as Buffer[]) {
      edge = appendToEdge(edge, size, hash);
      size += 1;
    }
    return { size, edge };
  }

  /** The committed tree over every stored leaf (call in a transaction that has not appended, for a consistent view). */
  function committedTree(): Tree {
    if (!committed) {
      const snapshot = readTree.get() as { size: number; edge: Buffer };
      committed = { size: snapshot.size, edge: edgeOf(snapshot.edge) };
    }
    committed = foldStored(committed);
    return committed;
  }

  /**
   * Inserts leaf `index`. The number comes from this process's tree, not from a read of the highest stored
   * index (a query on every tool call): when another process has appended since this one last looked, the
   * number is taken, the insert fails on the primary key (only that statement is undone, the transaction
   * goes on), and the tree is caught up from the stored leaves before the next try. Appends are serialised
   * by the write lock, so a number that is free now stays free until this transaction commits.
   */
  function insertLeaf(tree: Tree, draft: ReceiptDraft): { tree: Tree; receipt: Receipt } {
    for (;;) {
      const receipt = receiptOf(tree.size, draft);
      // The leaf's JSON text is made once: hashed as UTF-8 and stored as is (no Buffer round trip).
      const body = receiptLeafText(receipt);
      const hash = leafHash(body);
      try {
        insert.run(receipt.index, receipt.time, receipt.session, receipt.person, receipt.tool, receipt.outcome, body, hash);
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_CONSTRAINT_PRIMARYKEY') throw error;
        // From `tree`, which holds this transaction's own leaves so far: only other processes' leaves are above.
        // A taken number means a stored leaf at or above it, so each try moves on and the loop ends.
        const caughtUp = foldStored(tree);
        if (caughtUp.size <= tree.size) throw error;
        tree = caughtUp;
        continue;
      }
      const next = { size: receipt.index + 1, edge: appendToEdge(tree.edge, receipt.index, hash) };
      if (next.size % EDGE_SNAPSHOT_EVERY === 0) snapshot(next);
      return { tree: next, receipt };
    }
  }

  function snapshot(tree: Tree): void {
    writeTree.run(tree.size, Buffer.concat(tree.edge));
  }

  return {
    foldStored,
    committedTree,
    /** The tree an append starts from: the first append of this process reads the stored tree, later ones start from what it knows. */
    startingTree: (): Tree => committed ?? committedTree(),
    /** Once a transaction that appended has committed: its tree is the committed one. */
    commit(tree: Tree): void {
      committed = tree;
    },
    insertLeaf,
    snapshot,
  };
}
