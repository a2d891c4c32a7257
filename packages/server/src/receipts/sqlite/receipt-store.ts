import { rootOfEdge, type Receipt } from '@gateway/core';
import type { SqliteDatabase } from '../../store/sqlite/database.js';
import { sqliteTransactionOf } from '../../store/sqlite/unit-of-work.js';
import type { Transaction } from '../../store/unit-of-work.js';
import type { ReceiptDraft, ReceiptFilter, ReceiptStore, StoredCheckpoint, StoredReceiptRow } from '../store.js';
import { createTreeKeeper, type Tree } from './tree.js';

interface CheckpointRow {
  tree_size: number;
  root_hash: Buffer;
  note: string;
  verifier_key: string;
  created_at: string;
}

interface ReceiptRow {
  leaf_index: number;
  body: string;
  leaf_hash: Buffer;
  time: string;
  session: string | null;
  person: string | null;
  tool: string;
  outcome: string;
}

function checkpointOf(row: CheckpointRow): StoredCheckpoint {
  return { treeSize: row.tree_size, rootHash: row.root_hash, note: row.note, verifierKey: row.verifier_key, createdAt: row.created_at };
}

function rowOf(row: ReceiptRow): StoredReceiptRow {
  return {
    index: row.leaf_index,
    body: row.body,
    leafHash: row.leaf_hash,
    columns: { time: row.time, session: row.session, person: row.person, tool: row.tool, outcome: row.outcome },
  };
}

/** `SELECT body FROM receipts` with the filter's conditions, in leaf order. */
function listQuery(filter: ReceiptFilter): { sql: string; values: unknown[] } {
  const conditions: string[] = [];
  const values: unknown[] = [];
  const add = (condition: string, value: string | number | undefined) => {
    if (value === undefined) return;
    conditions.push(condition);
    values.push(value);
  };
  add('session = ?', filter.session);
  add('tool = ?', filter.tool);
  add('person = ?', filter.person);
  add('outcome = ?', filter.outcome);
  add('time >= ?', filter.since);
  add('time <= ?', filter.until);
  add('leaf_index > ?', filter.afterIndex);
  add('leaf_index < ?', filter.beforeIndex);
  const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
  const order = filter.newestFirst ? ' DESC' : '';
  return { sql: `SELECT body FROM receipts ${where} ORDER BY leaf_index${order} LIMIT ?`, values: [...values, filter.limit] };
}

/**
 * The receipt store over SQLite (tables: ./migrations.ts). Every method runs its statements synchronously when
 * called (better-sqlite3 is synchronous) and returns a settled promise: a unit of work over this connection
 * (store/sqlite/unit-of-work.ts) then never waits for the event loop. The SQLite specifics of numbering: n comes
 * from the tree this connection already knows, and the primary key says when another process appended
 * meanwhile (it then catches up and tries the next number), which spares a query per append.
 */
export function createSqliteReceiptStore(database: SqliteDatabase): ReceiptStore {
  const tree = createTreeKeeper(database);
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
  // The tree head in a read transaction of its own: the folded leaves and the stored size are one state.
  const readCommittedTree = database.transaction(tree.committedTree);

  /** The tree of each open transaction that appended: committed state only once that transaction commits. */
  const appended = new WeakMap<Transaction, Tree>();

  /** The tree as `tx` sees it: its own leaves included, with what others stored folded in. */
  function treeIn(tx: Transaction): Tree {
    const own = appended.get(tx);
    return own ? tree.foldStored(own) : tree.committedTree();
  }

  function append(tx: Transaction, drafts: readonly ReceiptDraft[]): Receipt[] {
    const transaction = sqliteTransactionOf(tx, database);
    let current = appended.get(tx);
    if (!current) transaction.afterCommit(() => tree.commit(appended.get(tx)!));
    current ??= tree.startingTree();
    const receipts: Receipt[] = [];
    for (const draft of drafts) {
      const next = tree.insertLeaf(current, draft);
      current = next.tree;
      receipts.push(next.receipt);
    }
    appended.set(tx, current);
    return receipts;
  }

  return {
    append: async (tx, drafts, mark) => {
      const receipts = append(tx, drafts);
      if (mark) upsertMark.run(mark.journal, mark.seq);
      return receipts;
    },
    journalMark: async (journal) => (selectMark.get(journal) as number | undefined) ?? 0,
    setJournalMark: async (tx, mark) => {
      sqliteTransactionOf(tx, database);
      upsertMark.run(mark.journal, mark.seq);
    },
    head: async (tx) => {
      if (tx) sqliteTransactionOf(tx, database);
      const current = tx ? treeIn(tx) : readCommittedTree.deferred();
      return { size: current.size, rootHash: rootOfEdge(current.edge) };
    },
    get: async (index) => {
      const body = selectOne.get(index) as string | undefined;
      return body === undefined ? undefined : (JSON.parse(body) as Receipt);
    },
    list: async (filter) => {
      const { sql, values } = listQuery(filter);
      return (
        database
          .prepare(sql)
          .pluck()
          .all(...values) as string[]
      ).map((body) => JSON.parse(body) as Receipt);
    },
    rows: async (fromIndex, limit) => (selectRows.all(fromIndex, limit) as ReceiptRow[]).map(rowOf),
    leafHashes: async (size) => selectLeafHashes.all(size) as Buffer[],
    leafHashesBetween: async (from, to, tx) => {
      if (tx) sqliteTransactionOf(tx, database);
      return selectLeafHashesBetween.all(from, to) as Buffer[];
    },
    addCheckpoint: async (tx, checkpoint) => {
      sqliteTransactionOf(tx, database);
      const { treeSize, rootHash, note, verifierKey, createdAt } = checkpoint;
      // Another process may have stored this tree size first: its hooks wrote the events.
      if (insertCheckpoint.run(treeSize, rootHash, note, verifierKey, createdAt).changes !== 1) return false;
      // The edge snapshot moves up with each checkpoint: after a restart, leaves deleted from the end of the
      // file below a signed size still leave a gap that `receipts verify` names.
      const current = treeIn(tx);
      if (current.size === treeSize) tree.snapshot(current);
      return true;
    },
    latestCheckpoint: async (tx) => {
      if (tx) sqliteTransactionOf(tx, database);
      const row = selectLatestCheckpoint.get() as CheckpointRow | undefined;
      return row ? checkpointOf(row) : undefined;
    },
    checkpoints: async () => (selectCheckpoints.all() as CheckpointRow[]).map(checkpointOf),
  };
}
