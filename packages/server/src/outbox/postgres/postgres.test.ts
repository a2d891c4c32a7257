import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../test/support/databases.js';
import { receiptEvent } from '../contract/harness.js';
import { postgresReceiptMigrations, postgresReceiptStorage } from '../../receipts/postgres/index.js';
import { createReceiptWriter } from '../../receipts/writer.js';
import { openPostgres } from '../../store/postgres/database.js';
import { PostgresUnitOfWork } from '../../store/postgres/unit-of-work.js';
import { outboxDeliveryContract } from '../contract/delivery.contract.js';
import { outboxEventsContract } from '../contract/events.contract.js';
import type { OutboxStoreFactory } from '../contract/harness.js';
import { outboxSequencesContract } from '../contract/sequences.contract.js';
import { createOutbox } from '../outbox.js';
import { outboxMigrations } from '../sqlite/index.js';
import { postgresOutboxMigrations, postgresOutboxStore } from './index.js';

/** Each test: a fresh database on this file's PostgreSQL, migrated as the gateway migrates it. */
const postgres = postgresForThisFile();
const postgresFactory: OutboxStoreFactory = async () => {
  const database = await freshPostgresDatabase(postgres.server, postgresOutboxMigrations);
  return { store: postgresOutboxStore(database.pool), unitOfWork: new PostgresUnitOfWork(database.pool), close: database.close };
};

outboxSequencesContract('PostgreSQL', postgresFactory);
outboxDeliveryContract('PostgreSQL', postgresFactory);
outboxEventsContract('PostgreSQL', postgresFactory);

describe('the PostgreSQL outbox across replicas', () => {
  it('uses the SQLite migration ids, step for step', () => {
    expect(postgresOutboxMigrations.map((migration) => migration.id)).toEqual(outboxMigrations.map((migration) => migration.id));
  });

  it("receipts appended on two replicas at once: each receipt's event in its unit of work, in receipt order, gap-free", async () => {
    const database = await freshPostgresDatabase(postgres.server, [...postgresReceiptMigrations, ...postgresOutboxMigrations]);
    const replica = openPostgres(database.url, { max: 5 });
    try {
      const writers = [database.pool, replica].map((pool) => {
        const outbox = createOutbox({ store: postgresOutboxStore(pool), endpoints: [{ name: 'audit' }] });
        return { outbox, writer: createReceiptWriter(postgresReceiptStorage(pool), [outbox]) };
      });
      await Promise.all(writers.map(({ outbox }) => outbox.ready));
      const failing = { onReceipt: () => Promise.reject(new Error('refused')) };
      const refused = createReceiptWriter(postgresReceiptStorage(replica), [writers[1]!.outbox, failing]);
      const appended = await Promise.allSettled(
        Array.from({ length: 40 }, (_, index) =>
          index % 7 === 3
            ? refused.append([{ ...DRAFT, tool: `t${index}` }])
            : writers[index % 2]!.writer.append([{ ...DRAFT, tool: `t${index}` }]),
        ),
      );
      const kept = appended.filter((result) => result.status === 'fulfilled').length;
      const store = postgresOutboxStore(database.pool);
      const events = await store.events('audit', { limit: 100 });
      // One event per stored receipt, none for the rolled-back ones; sequences 1..n in the receipts' order.
      expect(events.map((event) => event.sequence)).toEqual(Array.from({ length: kept }, (_, index) => index + 1));
      expect(events.map((event) => Number(event.receiptId!.slice('receipt-'.length)))).toEqual(
        Array.from({ length: kept }, (_, index) => index),
      );
      expect((await store.endpoint('audit'))?.nextSequence).toBe(kept + 1);
    } finally {
      await replica.end();
      await database.close();
    }
  });

  it('refuses an append outside a unit of work, and one of another pool', async () => {
    const database = await freshPostgresDatabase(postgres.server, postgresOutboxMigrations);
    const replica = openPostgres(database.url, { max: 2 });
    try {
      const store = postgresOutboxStore(database.pool);
      await store.ensureEndpoints(['audit']);
      await expect(store.append(undefined, 'audit', receiptEvent('audit', 'receipt-0'))).rejects.toThrow(/unit of work/);
      await expect(
        new PostgresUnitOfWork(replica).run((tx) => store.append(tx, 'audit', receiptEvent('audit', 'receipt-0'))),
      ).rejects.toThrow(/another connection pool/);
    } finally {
      await replica.end();
      await database.close();
    }
  });
});

const DRAFT = {
  time: '2026-01-01T00:00:00.000Z',
  session: 'session-1',
  person: 'alice',
  clientId: 'client-1',
  tool: 'get_order',
  source: 'orders',
  publication: 'publication-1',
  fingerprint: 'sha256:abc',
  login: null,
  outcome: 'allowed' as const,
  reason: null,
  upstreamStatus: 200,
  durationMs: 0.5,
  argumentsDigest: 'hmac-sha256:00',
  resultDigest: null,
};

describe('the PostgreSQL adapter of the outbox', () => {
  it('is the only code of the outbox and webhooks areas that names node-postgres or a PostgreSQL pool', () => {
    const server = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
    const naming = ['outbox', 'webhooks']
      .flatMap((area) => readdirSync(join(server, area), { recursive: true, encoding: 'utf8' }).map((file) => `${area}/${file}`))
      .map((file) => file.split('\\').join('/'))
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith('outbox/postgres/'))
      .filter((file) => /from 'pg'|PostgresPool|PostgresClient/.test(readFileSync(join(server, file), 'utf8')))
      .sort();
    expect(naming).toEqual([]);
  });
});
