import { appendToEdge, leafHash, receiptLeafText, receiptOf, rootOfEdge, type Receipt, type ReceiptOutcome } from '@gateway/core';
import type { SqliteDatabase } from '../store/sqlite/database.js';

/** A receipt before the log numbers it. */
export type ReceiptDraft = Omit<Receipt, 'id' | 'index'>;

/**
 * Called synchronously inside the transaction that appends a receipt, on the same database handle: what a
 * hook writes (the webhook outbox rows) commits or rolls back together with the receipt.
 */
export interface ReceiptHook {
  onReceipt(receipt: Receipt): void;
  /**
   * Called once a transaction's receipts have committed, with all of them in leaf order (never for a
   * transaction that rolled back). Appends are synchronous and serialised, so whatever the hook saw in
   * `onReceipt` since the previous call belongs to these receipts or to a transaction that rolled back.
   */
  afterCommit?(receipts: readonly Receipt[]): void;
  /**
   * Called inside the transaction that stores a newly signed checkpoint (not for one already stored), on the
   * same handle: what the hook writes (checkpoint events) commits or rolls back with the checkpoint's row.
   */
  onCheckpoint?(checkpoint: StoredCheckpoint): void;
}

/** How far a receipt journal (journal.ts) has been moved into the database. */
export interface JournalMark {
  journal: string;
  seq: number;
}

export interface TreeHead {
  size: number;
  rootHash: Buffer;
}

export interface StoredCheckpoint {
  treeSize: number;
  rootHash: Buffer;
  /** The C2SP signed note (checkpoint body, blank line, signature line). */
  note: string;
  /** The C2SP verifier key of the signer (`<name>+<key ID>+<base64 key>`): public. */
  verifierKey: string;
  createdAt: string;
}

export interface ReceiptFilter {
  session?: string;
  tool?: string;
  person?: string;
  outcome?: ReceiptOutcome;
  /** ISO times, inclusive. */
  since?: string;
  until?: string;
  /** Only receipts with a larger leaf index (paging). */
  afterIndex?: number;
  /** Only receipts with a smaller leaf index (paging newest first). */
  beforeIndex?: number;
  /** Newest (largest leaf index) first; oldest first when absent. */
  newestFirst?: boolean;
  limit: number;
}

/** A receipt as stored, for verification: the leaf bytes, the hash recorded at append, and the filter copies. */
export interface StoredReceiptRow {
  index: number;
  body: string;
  leafHash: Buffer;
  columns: { time: string; session: string | null; person: string | null; tool: string; outcome: string };
}

/**
 * The receipt log's storage. SQLite implements it here; a PostgreSQL store implements the same contract
 * for several gateway processes sharing one database. How n is assigned atomically: `append` runs in a write
 * transaction that serialises appends (SQLite: `BEGIN IMMEDIATE` takes the database write lock first;
 * PostgreSQL: `SELECT … FROM receipt_tree WHERE id = 1 FOR UPDATE`) and inserts leaf n = the number after
 * the highest stored leaf index before committing. The SQLite store takes n from the tree it already knows
 * and lets the primary key say when another process has appended meanwhile (it then catches up and tries
 * the next number), which spares a query per append; a PostgreSQL store may read the highest index under its
 * lock instead. n is therefore gap-free, unique, and equal to the order of the leaves in the tree, and a
 * rolled-back append leaves no trace. Reads need no lock.
 *
 * The tree's right edge (what the root is computed from) lives in memory and is caught up from the leaves
 * that other processes appended meanwhile; `receipt_tree` holds a snapshot of it (size and edge), written
 * with each checkpoint and every EDGE_SNAPSHOT_EVERY leaves inside an append, so a start folds in at most
 * that many leaf hashes. An append therefore writes one row, not two (about a third of the commit's cost).
 *
 * The methods are synchronous because better-sqlite3 is, which keeps the receipt write free of awaits on the
 * /mcp fast path. A PostgreSQL store is asynchronous: its port turns these return types into promises, and
 * the callers (the log's `record` and `checkpoint`, the pipeline's `receipt`, the admin routes) gain an
 * `await` each; nothing else in the contract changes.
 */
export interface ReceiptStore {
  append(draft: ReceiptDraft, hooks: readonly ReceiptHook[]): Receipt;
  /**
   * Appends several receipts in one transaction (group commit): all of them or none. `mark`: the journal
   * entry they come up to, recorded in the same transaction (a replay after a crash starts after it).
   */
  appendBatch(drafts: readonly ReceiptDraft[], hooks: readonly ReceiptHook[], mark?: JournalMark): Receipt[];
  /** The last entry of a receipt journal whose receipt is stored (or was given up); 0 when none. */
  journalMark(journal: string): number;
  /** Records that a journal's entries up to `seq` are done with, without a receipt (one that cannot be written). */
  setJournalMark(mark: JournalMark): void;
  head(): TreeHead;
  get(index: number): Receipt | undefined;
  list(filter: ReceiptFilter): Receipt[];
  /** Stored rows in leaf order from `fromIndex`, at most `limit`. */
  rows(fromIndex: number, limit: number): StoredReceiptRow[];
  /** The recorded leaf hashes of the first `size` leaves (proofs are computed from them). */
  leafHashes(size: number): Buffer[];
  /** The recorded leaf hashes of leaves `from` to `to - 1` that are stored (fewer when rows were deleted). */
  leafHashesBetween(from: number, to: number): Buffer[];
  /** Stores a signed checkpoint; `hooks` (their `onCheckpoint`) write in its transaction when it is new. */
  addCheckpoint(checkpoint: StoredCheckpoint, hooks?: readonly ReceiptHook[]): void;
  /**
   * Signs a checkpoint of the current tree: `sign` gets the tree head inside a write transaction (serialised
   * with every append and every other process's checkpoint, so what it checks and signs is the tree stored
   * now), and what it returns is stored in the same transaction, with what `hooks` (their `onCheckpoint`)
   * write. Returns it (undefined when `sign` declined).
   */
  addCheckpointWith(sign: (head: TreeHead) => StoredCheckpoint | undefined, hooks?: readonly ReceiptHook[]): StoredCheckpoint | undefined;
  latestCheckpoint(): StoredCheckpoint | undefined;
  checkpoints(): StoredCheckpoint[];
}

const HASH_BYTES = 32;

/** A tree as the store keeps it: its size and right edge (what the root is computed from). */
type Tree = { size: number; edge: Buffer[] };
/** How often (in leaves) an append also stores the tree's right edge, bounding what a start must fold in. */
export const EDGE_SNAPSHOT_EVERY = 1024;

function edgeOf(blob: Buffer): Buffer[] {
  const edge: Buffer[] = [];
  for (let offset = 0; offset < blob.length; offset += HASH_BYTES) edge.push(blob.subarray(offset, offset + HASH_BYTES));
  return edge;
}

interface CheckpointRow {
  tree_size: number;
  root_hash: Buffer;
  note: string;
  verifier_key: string;
  created_at: string;
}

function checkpointOf(row: CheckpointRow): StoredCheckpoint {
  return { treeSize: row.tree_size, rootHash: row.root_hash, note: row.note, verifierKey: row.verifier_key, createdAt: row.created_at };
}

export function createSqliteReceiptStore(database: SqliteDatabase): ReceiptStore {
  // Prepared once: an append is one insert in its transaction, no await (the /mcp fast path pays it).
  const readTree = database.prepare('SELECT size, edge FROM receipt_tree WHERE id = 1');
  const writeTree = database.prepare('UPDATE receipt_tree SET size = ?, edge = ? WHERE id = 1');
  const selectLastIndex = database.prepare('SELECT leaf_index FROM receipts ORDER BY leaf_index DESC LIMIT 1').pluck();
  const selectHashesFrom = database.prepare('SELECT leaf_hash FROM receipts WHERE leaf_index >= ? ORDER BY leaf_index').pluck();
  const insert = database.prepare(
    'INSERT INTO receipts (leaf_index, time, session, person, tool, outcome, body, leaf_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const selectOne = database.prepare('SELECT body FROM receipts WHERE leaf_index = ?').pluck();
  const selectRows = database.prepare(
    'SELECT leaf_index, body, leaf_hash, time, session, person, tool, outcome FROM receipts ' +
      'WHERE leaf_index >= ? ORDER BY leaf_index LIMIT ?',
  );
  const selectLeafHashes = database.prepare('SELECT leaf_hash FROM receipts WHERE leaf_index < ? ORDER BY leaf_index').pluck();
  const selectLeafHashesBetween = database
    .prepare('SELECT leaf_hash FROM receipts WHERE leaf_index >= ? AND leaf_index < ? ORDER BY leaf_index')
    .pluck();
  const insertCheckpoint = database.prepare(
    'INSERT OR IGNORE INTO receipt_checkpoints (tree_size, root_hash, note, verifier_key, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const selectLatestCheckpoint = database.prepare('SELECT * FROM receipt_checkpoints ORDER BY tree_size DESC LIMIT 1');
  const selectCheckpoints = database.prepare('SELECT * FROM receipt_checkpoints ORDER BY tree_size');
  const selectMark = database.prepare('SELECT seq FROM receipt_journal_marks WHERE journal = ?').pluck();
  const upsertMark = database.prepare(
    'INSERT INTO receipt_journal_marks (journal, seq) VALUES (?, ?) ON CONFLICT (journal) DO UPDATE SET seq = excluded.seq',
  );

  /** This process's view of the tree: size and right edge, never behind what it has appended itself. */
  let cached: Tree | undefined;

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

  /** The tree over every stored leaf (call inside a transaction, before it writes, for a consistent view). */
  function currentTree(): Tree {
    if (!cached) {
      const snapshot = readTree.get() as { size: number; edge: Buffer };
      cached = { size: snapshot.size, edge: edgeOf(snapshot.edge) };
    }
    cached = foldStored(cached);
    return cached;
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
      return { tree: { size: receipt.index + 1, edge: appendToEdge(tree.edge, receipt.index, hash) }, receipt };
    }
  }

  const appendTransaction = database.transaction(
    (
      drafts: readonly ReceiptDraft[],
      hooks: readonly ReceiptHook[],
      mark: JournalMark | undefined,
    ): { receipts: Receipt[]; tree: Tree } => {
      // The first append of this process reads the stored tree; later ones start from what it knows.
      let tree = cached ?? currentTree();
      const receipts: Receipt[] = [];
      for (const draft of drafts) {
        const appended = insertLeaf(tree, draft);
        tree = appended.tree;
        const receipt = appended.receipt;
        if (tree.size % EDGE_SNAPSHOT_EVERY === 0) writeTree.run(tree.size, Buffer.concat(tree.edge));
        for (const hook of hooks) hook.onReceipt(receipt);
        receipts.push(receipt);
      }
      if (mark) upsertMark.run(mark.journal, mark.seq);
      return { receipts, tree };
    },
  );

  // The tree head in a read transaction of its own: the folded leaves and the stored size are one state.
  const readHead = database.transaction(currentTree);

  function storeCheckpoint(checkpoint: StoredCheckpoint, hooks: readonly ReceiptHook[] = []): void {
    const inserted = insertCheckpoint.run(
      checkpoint.treeSize,
      checkpoint.rootHash,
      checkpoint.note,
      checkpoint.verifierKey,
      checkpoint.createdAt,
    ).changes;
    // Another process may have stored this tree size first: its hooks wrote the events.
    if (inserted === 1) for (const hook of hooks) hook.onCheckpoint?.(checkpoint);
    // The edge snapshot moves up with each checkpoint: after a restart, leaves deleted from the end of the
    // file below a signed size still leave a gap that `receipts verify` names.
    const tree = currentTree();
    if (tree.size === checkpoint.treeSize) writeTree.run(tree.size, Buffer.concat(tree.edge));
  }
  const addCheckpointTransaction = database.transaction(storeCheckpoint);
  const signCheckpointTransaction = database.transaction(
    (sign: (head: TreeHead) => StoredCheckpoint | undefined, hooks: readonly ReceiptHook[]) => {
      const tree = currentTree();
      const checkpoint = sign({ size: tree.size, rootHash: rootOfEdge(tree.edge) });
      if (checkpoint) storeCheckpoint(checkpoint, hooks);
      return checkpoint;
    },
  );

  function appendBatch(drafts: readonly ReceiptDraft[], hooks: readonly ReceiptHook[], mark?: JournalMark): Receipt[] {
    const { receipts, tree } = appendTransaction.immediate(drafts, hooks, mark);
    // Only once committed: a rolled-back append (a hook threw) leaves the edge as it was.
    cached = tree;
    for (const hook of hooks) hook.afterCommit?.(receipts);
    return receipts;
  }

  return {
    append: (draft, hooks) => appendBatch([draft], hooks)[0]!,
    appendBatch,
    journalMark: (journal) => (selectMark.get(journal) as number | undefined) ?? 0,
    setJournalMark: (mark) => {
      upsertMark.run(mark.journal, mark.seq);
    },
    head() {
      const tree = readHead.deferred();
      return { size: tree.size, rootHash: rootOfEdge(tree.edge) };
    },
    get(index) {
      const body = selectOne.get(index) as string | undefined;
      return body === undefined ? undefined : (JSON.parse(body) as Receipt);
    },
    list(filter) {
      const conditions: string[] = [];
      const values: unknown[] = [];
      const equal = (column: string, value: string | undefined) => {
        if (value === undefined) return;
        conditions.push(`${column} = ?`);
        values.push(value);
      };
      equal('session', filter.session);
      equal('tool', filter.tool);
      equal('person', filter.person);
      equal('outcome', filter.outcome);
      if (filter.since !== undefined) {
        conditions.push('time >= ?');
        values.push(filter.since);
      }
      if (filter.until !== undefined) {
        conditions.push('time <= ?');
        values.push(filter.until);
      }
      if (filter.afterIndex !== undefined) {
        conditions.push('leaf_index > ?');
        values.push(filter.afterIndex);
      }
      if (filter.beforeIndex !== undefined) {
        conditions.push('leaf_index < ?');
        values.push(filter.beforeIndex);
      }
      const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
      const bodies = database
        .prepare(`SELECT body FROM receipts ${where} ORDER BY leaf_index${filter.newestFirst ? ' DESC' : ''} LIMIT ?`)
        .pluck()
        .all(...values, filter.limit) as string[];
      return bodies.map((body) => JSON.parse(body) as Receipt);
    },
    rows(fromIndex, limit) {
      const rows = selectRows.all(fromIndex, limit) as Array<{
        leaf_index: number;
        body: string;
        leaf_hash: Buffer;
        time: string;
        session: string | null;
        person: string | null;
        tool: string;
        outcome: string;
      }>;
      return rows.map((row) => ({
        index: row.leaf_index,
        body: row.body,
        leafHash: row.leaf_hash,
        columns: { time: row.time, session: row.session, person: row.person, tool: row.tool, outcome: row.outcome },
      }));
    },
    leafHashes(size) {
      return selectLeafHashes.all(size) as Buffer[];
    },
    leafHashesBetween(from, to) {
      return selectLeafHashesBetween.all(from, to) as Buffer[];
    },
    addCheckpoint: (checkpoint, hooks = []) => addCheckpointTransaction.immediate(checkpoint, hooks),
    addCheckpointWith: (sign, hooks = []) => signCheckpointTransaction.immediate(sign, hooks),
    latestCheckpoint() {
      const row = selectLatestCheckpoint.get() as CheckpointRow | undefined;
      return row ? checkpointOf(row) : undefined;
    },
    checkpoints() {
      return (selectCheckpoints.all() as CheckpointRow[]).map(checkpointOf);
    },
  };
}
