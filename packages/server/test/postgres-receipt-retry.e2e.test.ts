/**
 * A receipt on PostgreSQL is committed before the call is answered (no journal: replicas share the log). The call
 * has run by then, so a commit the database refuses for a reason that passes (a serialisation failure, a deadlock, a
 * connection cut before COMMIT) is tried again rather than leaving a call without a receipt; any other refusal, and
 * the last of the tries, still answers the call with RECEIPT_WRITE_FAILED. The refusals are PostgreSQL's own: a
 * trigger on the receipts table raises them with a real SQLSTATE, counted by a sequence (which a rollback does not
 * take back), so the test knows how many times the gateway tried.
 */
import pg from 'pg';
import { inTransaction, isRetryableTransactionError } from '@gateway/runtime';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { postgresForThisFile } from '../../../test-support/postgres.js';
import { RECEIPT_COMMIT_RETRY_DELAYS_MS } from '../src/receipts/writer.js';
import { startPostgresHarness } from './support/cluster.js';
import type { Harness } from './support/harness.js';
import { freePort } from './support/net.js';

const postgres = postgresForThisFile();
let harness: Harness | undefined;
let database: pg.Client;
let client: Client;
let databaseUrl: string;

beforeAll(async () => {
  databaseUrl = await postgres.server.createDatabase();
  harness = await startPostgresHarness(databaseUrl);
  database = new pg.Client({ connectionString: databaseUrl });
  await database.connect();
  client = new Client({ name: 'receipt-retry', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(harness.mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }),
  );
}, 120_000);

afterAll(async () => {
  await client?.close();
  await database?.end();
  await harness?.stop();
});

beforeEach(async () => {
  await database.query('DROP TRIGGER IF EXISTS refuse_receipts ON receipts');
  await database.query('DROP SEQUENCE IF EXISTS receipt_tries');
  await database.query('CREATE SEQUENCE receipt_tries');
});

/** Every insert into `receipts` counts a try; the first `refusals` of them fail with SQLSTATE `sqlState`. */
async function refuseReceipts(refusals: number, sqlState: string): Promise<void> {
  await database.query(`
    CREATE OR REPLACE FUNCTION refuse_receipt() RETURNS trigger AS $$
    BEGIN
      IF nextval('receipt_tries') <= ${refusals} THEN
        RAISE EXCEPTION 'refused by the test' USING ERRCODE = '${sqlState}';
      END IF;
      RETURN NEW;
    END $$ LANGUAGE plpgsql`);
  await database.query('DROP TRIGGER IF EXISTS refuse_receipts ON receipts');
  await database.query('CREATE TRIGGER refuse_receipts BEFORE INSERT ON receipts FOR EACH ROW EXECUTE FUNCTION refuse_receipt()');
}

async function tries(): Promise<number> {
  const { rows } = await database.query<{ tries: string; is_called: boolean }>('SELECT last_value AS tries, is_called FROM receipt_tries');
  return rows[0]!.is_called ? Number(rows[0]!.tries) : 0;
}

async function receiptCount(): Promise<number> {
  const { rows } = await database.query<{ count: number }>('SELECT count(*)::int AS count FROM receipts');
  return rows[0]!.count;
}

const call = () => client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1001' } });

/**
 * Calls, and says whether the answer was withheld for want of a receipt (the SDK client reports the gateway's error
 * as a rejection or an error result, per version), with RECEIPT_WRITE_FAILED logged once for this call.
 */
async function withheld(): Promise<boolean> {
  const logged = () => harness!.logs.filter((line) => line.includes('"code":"RECEIPT_WRITE_FAILED"')).length;
  const before = logged();
  const answer = await call().catch((error: unknown) => error);
  const text = JSON.stringify(answer instanceof Error ? answer.message : answer);
  return text.includes('its receipt could not be written: its answer is withheld') && logged() === before + 1;
}

describe('a receipt commit PostgreSQL refuses', () => {
  it('is tried again after a serialisation failure and a deadlock: the call is answered and receipted once', async () => {
    await refuseReceipts(1, '40001');
    const before = await receiptCount();
    const first = await call();
    expect(first.isError).toBeFalsy();
    expect(await tries()).toBe(2);

    await database.query('ALTER SEQUENCE receipt_tries RESTART');
    await refuseReceipts(2, '40P01');
    const second = await call();
    expect(second.isError).toBeFalsy();
    expect(await tries()).toBe(3);
    // One receipt per call: the refused tries wrote nothing.
    expect(await receiptCount()).toBe(before + 2);
    const retries = harness!.logs.filter((line) => line.includes('not committed') && line.includes('trying again'));
    expect(retries).toHaveLength(3);
    expect(retries[0]).toContain('refused by the test');
  }, 60_000);

  it('gives up after its last try: the call is answered with RECEIPT_WRITE_FAILED, every try counted', async () => {
    await refuseReceipts(1_000, '40001');
    const before = await receiptCount();
    const started = Date.now();
    expect(await withheld()).toBe(true);
    expect(await tries()).toBe(RECEIPT_COMMIT_RETRY_DELAYS_MS.length + 1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(RECEIPT_COMMIT_RETRY_DELAYS_MS.reduce((sum, delay) => sum + delay, 0));
    expect(await receiptCount()).toBe(before);
  }, 60_000);

  it('is not tried again when the refusal would not pass (a check violation)', async () => {
    await refuseReceipts(1, '23514');
    const before = await receiptCount();
    expect(await withheld()).toBe(true);
    expect(await tries()).toBe(1);
    expect(await receiptCount()).toBe(before);
  }, 60_000);
});

describe('isRetryableTransactionError', () => {
  it('is true only for errors of inTransaction that wrote nothing and may pass: not for the same code thrown elsewhere', async () => {
    const pool = new pg.Pool({ connectionString: databaseUrl });
    const refused = async (sqlState: string) =>
      inTransaction(pool, (tx) => tx.query(`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '${sqlState}'; END $$`)).catch(
        (error: unknown) => error,
      );
    try {
      expect((await refused('40001')) as { code?: string }).toMatchObject({ code: '40001' });
      expect(isRetryableTransactionError(await refused('40001'))).toBe(true);
      expect(isRetryableTransactionError(await refused('40P01'))).toBe(true);
      expect(isRetryableTransactionError(await refused('23505'))).toBe(false);
      // The same SQLSTATE outside a transaction runner: nothing says it wrote nothing.
      expect(isRetryableTransactionError(Object.assign(new Error('x'), { code: '40001' }))).toBe(false);
    } finally {
      await pool.end();
    }
    // No server at the address: the transaction never began.
    const unreachable = new pg.Pool({
      connectionString: `postgres://nobody@127.0.0.1:${await freePort()}/none`,
      connectionTimeoutMillis: 2_000,
    });
    try {
      const error = await inTransaction(unreachable, async () => undefined).catch((caught: unknown) => caught);
      expect((error as { code?: string }).code).toBe('ECONNREFUSED');
      expect(isRetryableTransactionError(error)).toBe(true);
    } finally {
      await unreachable.end();
    }
  }, 30_000);
});
