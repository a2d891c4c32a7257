import type { Migration } from '../../store/schema/migration.js';

/**
 * The receipt log's tables on PostgreSQL, under the SQLite adapter's ids (../sqlite/migrations.ts) and in the same
 * shape: `receipts` holds each receipt's leaf bytes (`body`, RFC 8785 JSON: exactly what the leaf hash covers, so
 * any field a receipt carries is kept as is) plus copies of the filterable fields; `receipt_tree` the tree head
 * (size and right edge: one 32-byte subtree root per set bit of the size); `receipt_checkpoints` the signed notes.
 * Unlike SQLite, `receipt_tree` is rewritten by every append: its row lock is what numbers leaves across replicas,
 * and a replica then reads the head in one row instead of folding in what others appended. Never secrets.
 */
export const postgresReceiptMigrations: Migration[] = [
  {
    id: 'receipts-001',
    sql: `
      CREATE TABLE receipts (
        leaf_index BIGINT PRIMARY KEY,
        time TEXT NOT NULL,
        session TEXT,
        person TEXT,
        tool TEXT NOT NULL,
        outcome TEXT NOT NULL,
        body TEXT NOT NULL,
        leaf_hash BYTEA NOT NULL
      );
      CREATE TABLE receipt_tree (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        size BIGINT NOT NULL,
        edge BYTEA NOT NULL
      );
      INSERT INTO receipt_tree (id, size, edge) VALUES (1, 0, '\\x');
      CREATE TABLE receipt_checkpoints (
        tree_size BIGINT PRIMARY KEY,
        root_hash BYTEA NOT NULL,
        note TEXT NOT NULL,
        verifier_key TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
    `,
  },
  {
    // How far each receipt journal (receipts/journal.ts) has been moved into this database, as on SQLite.
    id: 'receipts-002',
    sql: `
      CREATE TABLE receipt_journal_marks (
        journal TEXT PRIMARY KEY,
        seq BIGINT NOT NULL
      );
    `,
  },
];
