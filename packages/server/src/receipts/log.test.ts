import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig, verifyReceiptLog, type LoadedConfig } from '@gateway/core';
import { createVault, type Vault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { openDatabase, type SqliteDatabase } from '../store/database.js';
import { createReceiptLog, RECEIPTS_DIGEST_KEY_SECRET, RECEIPTS_SIGNING_KEY_SECRET, type ReceiptFields, type ReceiptLog } from './log.js';
import { receiptMigrations } from './migrations.js';
import { createSqliteReceiptStore } from './store.js';

let directory: { path: string; cleanup: () => Promise<void> };
let database: SqliteDatabase;
let logs: ReceiptLog[];

beforeEach(async () => {
  directory = await temporaryDirectory('gateway-receipts-');
  database = openDatabase(join(directory.path, 'gateway.db'), receiptMigrations);
  logs = [];
});

afterEach(async () => {
  for (const log of logs) log.close();
  database.close();
  await directory.cleanup();
});

function configWith(extra: string): LoadedConfig {
  return parseConfig(`gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n${extra}`, join(directory.path, 'gateway.yaml'));
}

async function start(extra = '', vault?: Vault): Promise<{ log: ReceiptLog; vault: Vault }> {
  const loaded = configWith(extra);
  const realVault = vault ?? (await createVault(loaded, { env: { PATH: process.env.PATH } }));
  const log = await createReceiptLog({ store: createSqliteReceiptStore(database), vault: realVault, loaded });
  logs.push(log);
  return { log, vault: realVault };
}

function call(argumentsValue: unknown = { orderId: 'ord_1' }): ReceiptFields {
  return {
    time: new Date().toISOString(),
    session: 'session-1',
    person: 'alice',
    clientId: 'client-1',
    tool: 'get_order',
    source: 'orders',
    publication: 'publication-1',
    fingerprint: 'sha256:abc',
    login: 'orders/api_key',
    outcome: 'allowed',
    reason: null,
    upstreamStatus: 200,
    durationMs: 1.2,
    argumentsValue,
    resultValue: { content: [] },
  };
}

describe('the receipt log', () => {
  it('creates its digest and signing keys in the vault on first start and reuses them after', async () => {
    const first = await start();
    const digestKey = await first.vault.get(RECEIPTS_DIGEST_KEY_SECRET);
    expect(digestKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await first.vault.get(RECEIPTS_SIGNING_KEY_SECRET)).toContain('BEGIN PRIVATE KEY');
    const digest = (await first.log.record(call())).argumentsDigest;
    const second = await start('', first.vault);
    expect(second.log.verifierKey).toBe(first.log.verifierKey);
    expect((await second.log.record(call())).argumentsDigest).toBe(digest);
  });

  it('numbers receipts receipt-0, receipt-1, … and keys the argument digest (no plain SHA-256 of the arguments)', async () => {
    const { log } = await start();
    const a = await log.record(call({ orderId: 'ord_1' }));
    const b = await log.record(call({ orderId: 'ord_2' }));
    expect([a.id, b.id]).toEqual(['receipt-0', 'receipt-1']);
    expect(a.argumentsDigest).not.toBe(b.argumentsDigest);
    expect(a).not.toHaveProperty('arguments');
    expect(JSON.stringify(log.store.get(0))).not.toContain('ord_1');
  });

  it('stores argument values only with receipts.storeArguments: true', async () => {
    const { log } = await start('receipts:\n  storeArguments: true');
    expect((await log.record(call({ orderId: 'ord_9' }))).arguments).toEqual({ orderId: 'ord_9' });
  });

  it('signs a checkpoint every N receipts (receipts.checkpoint.everyReceipts)', async () => {
    const { log } = await start('receipts:\n  checkpoint: { everyReceipts: 4, everySeconds: 3600 }');
    for (let index = 0; index < 9; index += 1) await log.record(call());
    expect(log.store.checkpoints().map((checkpoint) => checkpoint.treeSize)).toEqual([4, 8]);
    const receipts = log.store.rows(0, 100).map((row) => ({ receipt: JSON.parse(row.body), recordedLeafHash: row.leafHash }));
    expect(verifyReceiptLog({ receipts, checkpoints: log.store.checkpoints(), trustedKeys: [log.verifierKey] })).toMatchObject({
      ok: true,
      checkpointsVerified: 2,
    });
  });

  it('signs a checkpoint after T seconds with new receipts (receipts.checkpoint.everySeconds)', async () => {
    const { log } = await start('receipts:\n  checkpoint: { everyReceipts: 1000, everySeconds: 0.2 }');
    await log.record(call());
    expect(log.store.checkpoints()).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(log.store.checkpoints().map((checkpoint) => checkpoint.treeSize)).toEqual([1]);
  });

  it('a hook runs inside the append transaction: when it fails, the receipt is not written either', async () => {
    const { log } = await start();
    await log.record(call());
    const seen: string[] = [];
    let isFull = false;
    log.addHook({
      onReceipt(receipt) {
        seen.push(receipt.id);
        database.prepare('CREATE TABLE IF NOT EXISTS hook_rows (id TEXT)').run();
        database.prepare('INSERT INTO hook_rows VALUES (?)').run(receipt.id);
        if (isFull) throw new Error('outbox full');
      },
    });
    await log.record(call());
    isFull = true;
    await expect(log.record(call())).rejects.toThrow('outbox full');
    isFull = false;
    expect(seen).toEqual(['receipt-1', 'receipt-2']);
    expect(log.store.head().size).toBe(2);
    expect(database.prepare('SELECT id FROM hook_rows').pluck().all()).toEqual(['receipt-1']);
    // The next receipt takes the number the rolled-back one did not keep.
    expect((await log.record(call())).id).toBe('receipt-2');
    expect(seen).toEqual(['receipt-1', 'receipt-2', 'receipt-2']);
  });

  it('receipts recorded in one turn commit in one transaction, and one that cannot be written does not sink the others', async () => {
    const { log } = await start();
    const commits: string[][] = [];
    let refused: string | undefined;
    log.addHook({
      onReceipt(receipt) {
        if (receipt.tool === refused) throw new Error('outbox full');
      },
      afterCommit(receipts) {
        commits.push(receipts.map((receipt) => receipt.id));
      },
    });
    // Three calls ending in the same turn: one commit for the three.
    const together = await Promise.all([log.record(call()), log.record(call()), log.record(call())]);
    expect(together.map((receipt) => receipt.id)).toEqual(['receipt-0', 'receipt-1', 'receipt-2']);
    expect(commits).toEqual([['receipt-0', 'receipt-1', 'receipt-2']]);
    // The middle one's hook fails: the others are written (one by one after the shared transaction rolled back).
    refused = 'refused_tool';
    const results = await Promise.allSettled([log.record(call()), log.record({ ...call(), tool: 'refused_tool' }), log.record(call())]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(results.flatMap((result) => (result.status === 'fulfilled' ? [result.value.id] : []))).toEqual(['receipt-3', 'receipt-4']);
    expect(log.store.head().size).toBe(5);
    expect(log.store.list({ limit: 10 }).map((receipt) => receipt.tool)).not.toContain('refused_tool');
  });

  it('alone, a receipt commits as soon as the code yields; with other calls in flight, at the end of the turn, with theirs', async () => {
    const { log } = await start();
    const yieldTwice = async () => {
      await Promise.resolve();
      await Promise.resolve();
    };
    const alone = log.record(call());
    await yieldTwice();
    expect(log.store.head().size).toBe(1);
    await alone;
    const commits: number[] = [];
    log.addHook({ onReceipt() {}, afterCommit: (receipts) => commits.push(receipts.length) });
    const first = log.record(call(), { othersInFlight: true });
    await yieldTwice();
    // Not committed yet: the turn has not ended, and another call's receipt joins it.
    expect(log.store.head().size).toBe(1);
    const second = log.record(call(), { othersInFlight: true });
    expect((await Promise.all([first, second])).map((receipt) => receipt.id)).toEqual(['receipt-1', 'receipt-2']);
    expect(commits).toEqual([2]);
  });

  it('a checkpoint that fails after a commit is a warning, not a crash: the receipt is written and its call answered', async () => {
    const loaded = configWith('receipts:\n  checkpoint: { everyReceipts: 1, everySeconds: 3600 }');
    const vault = await createVault(loaded, { env: { PATH: process.env.PATH } });
    const sqlite = createSqliteReceiptStore(database);
    const store = Object.assign(Object.create(sqlite) as typeof sqlite, {
      addCheckpoint() {
        throw new Error('disk full');
      },
    });
    const warnings: string[] = [];
    const log = await createReceiptLog({ store, vault, loaded, warn: (message) => warnings.push(message) });
    logs.push(log);
    expect((await log.record(call())).id).toBe('receipt-0');
    expect(warnings).toEqual(['receipt checkpoint failed: disk full']);
    log.close();
    expect(warnings.at(-1)).toBe('final receipt checkpoint failed: disk full');
    expect(sqlite.head().size).toBe(1);
  });
});
