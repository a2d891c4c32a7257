import type { Migration } from '../../store/sqlite/database.js';

/**
 * Receipt log tables. `receipts` holds each receipt's leaf bytes (`body`, RFC 8785 JSON: exactly what the
 * leaf hash covers) plus copies of the filterable fields; `receipt_tree` a snapshot of the tree head (size and
 * the right edge of the Merkle tree, one 32-byte subtree root per set bit of the size), refreshed every
 * EDGE_SNAPSHOT_EVERY leaves (sqlite/receipt-store.ts keeps the current edge in memory); `receipt_checkpoints`
 * the signed notes. No secondary indexes on purpose: each one adds pages to every append's commit (and WAL
 * checkpoints), on every tool call (figures: docs/performance.md, "Receipt tables without secondary indexes");
 * filtered lists scan in leaf order instead, which an audit query can afford and a tool call cannot. Never
 * secrets: receipts carry keyed digests, checkpoints public keys.
 */
export const receiptMigrations: Migration[] = [
  {
    id: 'receipts-001',
    sql: `
      CREATE TABLE receipts (
        leaf_index INTEGER PRIMARY KEY,
        time TEXT NOT NULL,
        session TEXT,
        person TEXT,
        tool TEXT NOT NULL,
        outcome TEXT NOT NULL,
        body TEXT NOT NULL,
        leaf_hash BLOB NOT NULL
      );
      CREATE TABLE receipt_tree (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        size INTEGER NOT NULL,
        edge BLOB NOT NULL
      );
      INSERT INTO receipt_tree (id, size, edge) VALUES (1, 0, x'');
      CREATE TABLE receipt_checkpoints (
        tree_size INTEGER PRIMARY KEY,
        root_hash BLOB NOT NULL,
        note TEXT NOT NULL,
        verifier_key TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
    `,
  },
  {
    // How far each receipt journal (receipts/journal.ts) has been moved into this database: the number of its
    // last entry whose receipt is in `receipts` (or that was given up), written in the same transaction.
    id: 'receipts-002',
    sql: `
      CREATE TABLE receipt_journal_marks (
        journal TEXT PRIMARY KEY,
        seq INTEGER NOT NULL
      );
    `,
  },
];
