import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { rootOf } from '@gateway/core';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../test/support/databases.js';
import { openPostgres, type PostgresPool } from '../../store/postgres/database.js';
import { draft, type ReceiptStorageFactory } from '../contract/harness.js';
import { receiptStoreContract } from '../contract/receipt-store.contract.js';
import { receiptMigrations } from '../sqlite/index.js';
import type { StoredCheckpoint } from '../store.js';
import { createReceiptWriter } from '../writer.js';
import { postgresReceiptMigrations, postgresReceiptStorage } from './index.js';

/** Each test: a fresh database on this file's PostgreSQL; each connection is a pool of its own (one replica). */
const postgres = postgresForThisFile();
const postgresFactory: ReceiptStorageFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresReceiptMigrations);
  const pools: PostgresPool[] = [];
  return {
    async connect() {
      const pool = openPostgres(database.url, { max: 4 });
      pools.push(pool);
      return postgresReceiptStorage(pool);
    },
    async close() {
      await Promise.all(pools.map((pool) => pool.end()));
      await database.close();
    },
  };
};

receiptStoreContract('PostgreSQL', postgresFactory);

const CONNECTIONS = 6;

/** `count` replicas' pools on one fresh database, each already holding CONNECTIONS open connections. */
async function replicas(count: number): Promise<{ pools: PostgresPool[]; close: () => Promise<void> }> {
  const database = await freshPostgresDatabase(postgres.server, postgresReceiptMigrations);
  const pools = Array.from({ length: count }, () => openPostgres(database.url, { max: CONNECTIONS }));
  for (const pool of pools) {
    const clients = await Promise.all(Array.from({ length: CONNECTIONS }, () => pool.connect()));
    for (const client of clients) client.release();
  }
  return {
    pools,
    close: async () => {
      await Promise.all(pools.map((pool) => pool.end()));
      await database.close();
    },
  };
}

describe('the PostgreSQL receipt store across replicas', () => {
  it('uses the SQLite migration ids, step for step', () => {
    expect(postgresReceiptMigrations.map((migration) => migration.id)).toEqual(receiptMigrations.map((migration) => migration.id));
  });

  it('two replicas appending at once on all their connections number contiguously, batches unsplit, one tree', async () => {
    const { pools, close } = await replicas(2);
    try {
      const storages = pools.map(postgresReceiptStorage);
      const writers = storages.map((storage) => createReceiptWriter(storage, []));
      const batches = await Promise.all(
        Array.from({ length: 120 }, (_, index) =>
          writers[index % 2]!.append(Array.from({ length: 1 + (index % 3) }, (_, offset) => draft(`tool_${index}_${offset}`))),
        ),
      );
      const total = batches.reduce((sum, batch) => sum + batch.length, 0);
      const indices = batches.flat().map((receipt) => receipt.index);
      expect([...indices].sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, index) => index));
      for (const batch of batches) expect(batch.map((receipt) => receipt.index - batch[0]!.index)).toEqual(batch.map((_, at) => at));
      const hashes = await storages[0]!.store.leafHashes(Number.MAX_SAFE_INTEGER);
      expect(hashes).toHaveLength(total);
      for (const storage of storages) expect(await storage.store.head()).toEqual({ size: total, rootHash: rootOf(hashes) });
    } finally {
      await close();
    }
  });

  it('checkpoints signed on both replicas while they append sign the tree as stored, each size once', async () => {
    const { pools, close } = await replicas(2);
    try {
      const storages = pools.map(postgresReceiptStorage);
      const writers = storages.map((storage) => createReceiptWriter(storage, []));
      const signed: StoredCheckpoint[] = [];
      const mismatches: number[] = [];
      const sign = (replica: number) =>
        writers[replica]!.addCheckpoint(async (tx, head) => {
          // What is signed is the stored tree in this unit of work: the head equals the root of the leaves it sees.
          const leaves = await storages[replica]!.store.leafHashesBetween(0, head.size, tx);
          if (leaves.length !== head.size || !rootOf(leaves).equals(head.rootHash)) mismatches.push(head.size);
          const checkpoint = {
            treeSize: head.size,
            rootHash: head.rootHash,
            note: `note ${head.size}`,
            verifierKey: 'gateway+00000000+key',
            createdAt: new Date().toISOString(),
          };
          signed.push(checkpoint);
          return checkpoint;
        });
      await Promise.all(
        Array.from({ length: 60 }, (_, index) =>
          index % 6 === 0 ? sign(index % 2) : writers[index % 2]!.append([draft(`tool_${index}`)]),
        ),
      );
      const hashes = await storages[1]!.store.leafHashes(Number.MAX_SAFE_INTEGER);
      const stored = await storages[1]!.store.checkpoints();
      expect(new Set(stored.map((checkpoint) => checkpoint.treeSize)).size).toBe(stored.length);
      for (const checkpoint of stored) expect(checkpoint.rootHash).toEqual(rootOf(hashes.slice(0, checkpoint.treeSize)));
      expect(signed.length).toBe(10);
      expect(mismatches).toEqual([]);
      // Checkpoints stored in tree order: a later one never signs a smaller tree.
      expect(stored.map((checkpoint) => checkpoint.treeSize)).toEqual(
        signed.map((checkpoint) => checkpoint.treeSize).filter((size, at, all) => all.indexOf(size) === at),
      );
    } finally {
      await close();
    }
  });
});

describe('the PostgreSQL adapter of the receipts area', () => {
  it('is the only part of the area that names node-postgres or a PostgreSQL pool', () => {
    const area = join(dirname(fileURLToPath(import.meta.url)), '..');
    const naming = readdirSync(area, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith('postgres'))
      .filter((file) => /from 'pg'|PostgresPool|PostgresClient/.test(readFileSync(join(area, file), 'utf8')))
      .map((file) => relative(area, join(area, file)).split('\\').join('/'));
    expect(naming).toEqual([]);
  });
});
