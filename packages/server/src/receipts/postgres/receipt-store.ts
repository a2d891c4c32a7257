import { appendToEdge, leafHash, receiptLeafText, receiptOf, rootOfEdge, type Receipt } from '@gateway/core';
import type { PostgresClient, PostgresPool, Queryable } from '../../store/postgres/database.js';
import { postgresClientOf } from '../../store/postgres/unit-of-work.js';
import type { Transaction } from '../../store/unit-of-work.js';
import type { JournalMark, ReceiptDraft, ReceiptFilter, ReceiptStore, StoredCheckpoint, StoredReceiptRow, TreeHead } from '../store.js';

const HASH_BYTES = 32;

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

/** A tree as `receipt_tree` holds it: its size and right edge (what the root is computed from). */
interface Tree {
  size: number;
  edge: Buffer[];
}

function treeOf(row: { size: number; edge: Buffer }): Tree {
  const edge: Buffer[] = [];
  for (let offset = 0; offset < row.edge.length; offset += HASH_BYTES) edge.push(row.edge.subarray(offset, offset + HASH_BYTES));
  return { size: row.size, edge };
}

const headOf = (tree: Tree): TreeHead => ({ size: tree.size, rootHash: rootOfEdge(tree.edge) });

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
    values.push(value);
    conditions.push(`${condition} $${values.length}`);
  };
  add('session =', filter.session);
  add('tool =', filter.tool);
  add('person =', filter.person);
  add('outcome =', filter.outcome);
  add('time >=', filter.since);
  add('time <=', filter.until);
  add('leaf_index >', filter.afterIndex);
  add('leaf_index <', filter.beforeIndex);
  const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
  const order = filter.newestFirst ? ' DESC' : '';
  values.push(filter.limit);
  return { sql: `SELECT body FROM receipts ${where} ORDER BY leaf_index${order} LIMIT $${values.length}`, values };
}

const UPSERT_MARK =
  'INSERT INTO receipt_journal_marks (journal, seq) VALUES ($1, $2) ON CONFLICT (journal) DO UPDATE SET seq = excluded.seq';

/**
 * The tree head locked for the rest of `client`'s transaction. Every append and every checkpoint takes this row
 * lock first, on whichever replica: they are serialised across replicas, and a lock that waited returns the row
 * as the transaction before it committed it (PostgreSQL re-reads a locked row's newest version).
 */
async function lockedTree(client: PostgresClient): Promise<Tree> {
  const { rows } = await client.query<{ size: number; edge: Buffer }>('SELECT size, edge FROM receipt_tree WHERE id = 1 FOR UPDATE');
  return treeOf(rows[0]!);
}

/** Rows per INSERT: 8 parameters each, far below PostgreSQL's 65,535 per statement (a long journal's batch). */
const ROWS_PER_INSERT = 1000;

async function insertRows(client: PostgresClient, rows: ReadonlyArray<readonly unknown[]>): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    const chunk = rows.slice(start, start + ROWS_PER_INSERT);
    const tuples = chunk.map((_, row) => `(${Array.from({ length: 8 }, (_, column) => `$${row * 8 + column + 1}`).join(', ')})`);
    await client.query(
      `INSERT INTO receipts (leaf_index, time, session, person, tool, outcome, body, leaf_hash) VALUES ${tuples.join(', ')}`,
      chunk.flat(),
    );
  }
}

/** Inserts the leaves numbered from `tree.size` and moves the tree head past them; answers the receipts. */
async function insertLeaves(client: PostgresClient, tree: Tree, drafts: readonly ReceiptDraft[]): Promise<Receipt[]> {
  const receipts: Receipt[] = [];
  const rows: unknown[][] = [];
  let { size, edge } = tree;
  for (const draft of drafts) {
    const receipt = receiptOf(size, draft);
    // The leaf's JSON text is made once: hashed as UTF-8 and stored as is.
    const body = receiptLeafText(receipt);
    const hash = leafHash(body);
    rows.push([receipt.index, receipt.time, receipt.session, receipt.person, receipt.tool, receipt.outcome, body, hash]);
    edge = appendToEdge(edge, size, hash);
    size += 1;
    receipts.push(receipt);
  }
  if (receipts.length === 0) return receipts;
  await insertRows(client, rows);
  await client.query('UPDATE receipt_tree SET size = $1, edge = $2 WHERE id = 1', [size, Buffer.concat(edge)]);
  return receipts;
}

/**
 * The receipt store (../store.ts) on PostgreSQL, for several replicas sharing one database (tables: ./migrations.ts).
 * Numbering: an append locks the tree head's row (`FOR UPDATE`) in its unit of work, numbers its leaves from the
 * head's size, inserts them and writes the new head, all in that transaction: leaf numbers are gap-free, unique and
 * in commit order across every replica, the head always covers exactly the stored leaves, and a rolled-back append
 * leaves neither rows nor a moved head. The lock is held until the unit of work commits, so one replica's receipt
 * commit waits for another's; each holds it for its own few statements only.
 */
export function createPostgresReceiptStore(pool: PostgresPool): ReceiptStore {
  const clientOf = (tx: Transaction) => postgresClientOf(tx, pool);
  const on = (tx: Transaction | undefined): Queryable => (tx ? clientOf(tx) : pool);
  return {
    append: async (tx, drafts, mark?: JournalMark) => {
      const client = clientOf(tx);
      const receipts = await insertLeaves(client, await lockedTree(client), drafts);
      if (mark) await client.query(UPSERT_MARK, [mark.journal, mark.seq]);
      return receipts;
    },
    journalMark: async (journal) => {
      const { rows } = await pool.query<{ seq: number }>('SELECT seq FROM receipt_journal_marks WHERE journal = $1', [journal]);
      return rows[0]?.seq ?? 0;
    },
    setJournalMark: async (tx, mark) => {
      await clientOf(tx).query(UPSERT_MARK, [mark.journal, mark.seq]);
    },
    head: async (tx) => {
      // In a unit of work (a checkpoint's), the head is locked: what is signed is the tree until that unit commits.
      if (tx) return headOf(await lockedTree(clientOf(tx)));
      const { rows } = await pool.query<{ size: number; edge: Buffer }>('SELECT size, edge FROM receipt_tree WHERE id = 1');
      return headOf(treeOf(rows[0]!));
    },
    get: async (index) => {
      const { rows } = await pool.query<{ body: string }>('SELECT body FROM receipts WHERE leaf_index = $1', [index]);
      return rows[0] ? (JSON.parse(rows[0].body) as Receipt) : undefined;
    },
    list: async (filter) => {
      const { sql, values } = listQuery(filter);
      const { rows } = await pool.query<{ body: string }>(sql, values);
      return rows.map((row) => JSON.parse(row.body) as Receipt);
    },
    rows: async (fromIndex, limit) => {
      const { rows } = await pool.query<ReceiptRow>(
        'SELECT leaf_index, body, leaf_hash, time, session, person, tool, outcome FROM receipts ' +
          'WHERE leaf_index >= $1 ORDER BY leaf_index LIMIT $2',
        [fromIndex, limit],
      );
      return rows.map(rowOf);
    },
    leafHashes: async (size) => {
      const { rows } = await pool.query<{ leaf_hash: Buffer }>('SELECT leaf_hash FROM receipts WHERE leaf_index < $1 ORDER BY leaf_index', [
        Math.min(size, Number.MAX_SAFE_INTEGER),
      ]);
      return rows.map((row) => row.leaf_hash);
    },
    leafHashesBetween: async (from, to, tx) => {
      const { rows } = await on(tx).query<{ leaf_hash: Buffer }>(
        'SELECT leaf_hash FROM receipts WHERE leaf_index >= $1 AND leaf_index < $2 ORDER BY leaf_index',
        [from, to],
      );
      return rows.map((row) => row.leaf_hash);
    },
    addCheckpoint: async (tx, checkpoint) => {
      const { treeSize, rootHash, note, verifierKey, createdAt } = checkpoint;
      // Another replica may have stored this tree size first: its hooks wrote the events.
      const { rowCount } = await clientOf(tx).query(
        'INSERT INTO receipt_checkpoints (tree_size, root_hash, note, verifier_key, created_at) VALUES ($1, $2, $3, $4, $5) ' +
          'ON CONFLICT (tree_size) DO NOTHING',
        [treeSize, rootHash, note, verifierKey, createdAt],
      );
      return rowCount === 1;
    },
    latestCheckpoint: async (tx) => {
      const { rows } = await on(tx).query<CheckpointRow>('SELECT * FROM receipt_checkpoints ORDER BY tree_size DESC LIMIT 1');
      return rows[0] ? checkpointOf(rows[0]) : undefined;
    },
    checkpoints: async () => {
      const { rows } = await pool.query<CheckpointRow>('SELECT * FROM receipt_checkpoints ORDER BY tree_size');
      return rows.map(checkpointOf);
    },
  };
}
