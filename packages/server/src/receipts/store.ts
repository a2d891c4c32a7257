import type { Receipt, ReceiptOutcome } from '@gateway/core';
import type { Transaction, UnitOfWork } from '../store/unit-of-work.js';

/** A receipt before the log numbers it. */
export type ReceiptDraft = Omit<Receipt, 'id' | 'index'>;

/**
 * What another port writes with each receipt and each new checkpoint (the webhook outbox: its events), in the same
 * unit of work: `tx` is the transaction the receipt or the checkpoint is written in, to be handed to that port's
 * own methods, so both commit or roll back together; no database connection is handed around.
 */
export interface ReceiptHook {
  onReceipt(receipt: Receipt, tx: Transaction): void | Promise<void>;
  /**
   * Called once a unit of work's receipts (or a new checkpoint: then `receipts` is empty) have committed, with
   * all of them in leaf order and the transaction they were written in (never for one that rolled back). On SQLite
   * units of work are serialised; on PostgreSQL several may be open at once (each replica's, and each connection's),
   * so a hook keys what it saw in `onReceipt` by `tx` (the outbox's handover does): what it saw under this `tx`
   * belongs to these receipts.
   */
  afterCommit?(receipts: readonly Receipt[], tx: Transaction): void;
  /**
   * Called in the unit of work that stores a newly signed checkpoint (not for one already stored): what the hook
   * writes with `tx` (checkpoint events) commits or rolls back with the checkpoint's row.
   */
  onCheckpoint?(checkpoint: StoredCheckpoint, tx: Transaction): void | Promise<void>;
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
 * The receipt log's storage, awaitable (`sqlite/` and `postgres/` implement it, both passing
 * `contract/receipt-store.contract.ts`; PostgreSQL for several replicas sharing one database).
 *
 * Writes take the unit of work's `tx` (../store/unit-of-work.ts): a receipt, its journal mark and what the hooks
 * write (outbox rows) commit together. How n is assigned: appends are serialised by the transaction (SQLite:
 * `BEGIN IMMEDIATE` takes the database write lock first; PostgreSQL: `SELECT … FROM receipt_tree WHERE id = 1
 * FOR UPDATE`), and leaf n is the number after the highest stored leaf index. n is therefore gap-free, unique,
 * and equal to the order of the leaves in the tree, and a rolled-back append leaves no trace. Reads without `tx`
 * need no lock; reads given `tx` see what it wrote.
 */
export interface ReceiptStore {
  /**
   * Appends receipts numbered after the highest stored leaf, in `tx`: with it, all of them or none. `mark`: the
   * journal entry they come up to, recorded in the same transaction (a replay after a crash starts after it).
   */
  append(tx: Transaction, drafts: readonly ReceiptDraft[], mark?: JournalMark): Promise<Receipt[]>;
  /** The last entry of a receipt journal whose receipt is stored (or was given up); 0 when none. */
  journalMark(journal: string): Promise<number>;
  /** Records that a journal's entries up to `seq` are done with, without a receipt (one that cannot be written). */
  setJournalMark(tx: Transaction, mark: JournalMark): Promise<void>;
  /** The tree over every stored leaf (in `tx`: what a checkpoint signs, serialised with every append). */
  head(tx?: Transaction): Promise<TreeHead>;
  get(index: number): Promise<Receipt | undefined>;
  list(filter: ReceiptFilter): Promise<Receipt[]>;
  /** Stored rows in leaf order from `fromIndex`, at most `limit`. */
  rows(fromIndex: number, limit: number): Promise<StoredReceiptRow[]>;
  /** The recorded leaf hashes of the first `size` leaves (proofs are computed from them). */
  leafHashes(size: number): Promise<Buffer[]>;
  /** The recorded leaf hashes of leaves `from` to `to - 1` that are stored (fewer when rows were deleted). */
  leafHashesBetween(from: number, to: number, tx?: Transaction): Promise<Buffer[]>;
  /**
   * Stores a signed checkpoint in `tx`; false when one of that tree size is stored already (another process
   * signed it first: its hooks wrote the events), and then nothing is written.
   */
  addCheckpoint(tx: Transaction, checkpoint: StoredCheckpoint): Promise<boolean>;
  latestCheckpoint(tx?: Transaction): Promise<StoredCheckpoint | undefined>;
  checkpoints(): Promise<StoredCheckpoint[]>;
}

/**
 * What the receipt log writes through: its store, and the unit of work its appends and checkpoints run in (over
 * the same database, so the hooks' ports write in the same transaction).
 */
export interface ReceiptStorage {
  store: ReceiptStore;
  unitOfWork: UnitOfWork;
}
