import type { Migration } from '../store/database.js';

/**
 * Receipt log tables. `receipts` holds each receipt's leaf bytes (`body`, RFC 8785 JSON: exactly what the
 * leaf hash covers) plus copies of the filterable fields; `receipt_tree` the single tree head (size and the
 * right edge of the Merkle tree, one 32-byte subtree root per set bit of the size); `receipt_checkpoints`
 * the signed notes. Never secrets: receipts carry keyed digests, checkpoints public keys.
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
      CREATE INDEX receipts_by_session ON receipts (session, leaf_index);
      CREATE INDEX receipts_by_tool ON receipts (tool, leaf_index);
      CREATE INDEX receipts_by_person ON receipts (person, leaf_index);
      CREATE INDEX receipts_by_time ON receipts (time);
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
];
