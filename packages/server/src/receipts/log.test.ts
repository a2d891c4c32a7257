import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendToEdge, leafHash, parseConfig, receiptLeafText, verifyReceiptLog, type LoadedConfig, type Receipt } from '@gateway/core';
import { createVault, type Vault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { openDatabase, type SqliteDatabase } from '../store/sqlite/database.js';
import { createReceiptLog, RECEIPTS_DIGEST_KEY_SECRET, RECEIPTS_SIGNING_KEY_SECRET, type ReceiptFields, type ReceiptLog } from './log.js';
import { RECEIPTS_ANCHOR_FILE, RECEIPTS_ANCHOR_SECRET } from './anchor.js';
import { authenticatedLine, claimJournals, journalSlots, openReceiptJournal, type ReceiptJournal } from './journal.js';
import { journalKeyIn, journalText, receiptDraft } from '../../test/support/receipt-journal.js';
import { MOVE_GATHER_RECEIPTS } from './journal-mover.js';
import { receiptMigrations, sqliteReceiptStorage } from './sqlite/index.js';
import type { ReceiptHook, ReceiptStorage } from './store.js';

let directory: { path: string; cleanup: () => Promise<void> };
let database: SqliteDatabase;
let logs: ReceiptLog[];

beforeEach(async () => {
  directory = await temporaryDirectory('gateway-receipts-');
  database = openDatabase(join(directory.path, 'gateway.db'), receiptMigrations);
  logs = [];
});

afterEach(async () => {
  for (const log of logs) {
    await log.close();
    await log.anchor.settled();
  }
  database.close();
  await directory.cleanup();
});

function configWith(extra: string): LoadedConfig {
  return parseConfig(`gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n${extra}`, join(directory.path, 'gateway.yaml'));
}

/**
 * A receipt log over the test's database (or `store`), with the journal of slot `main` when `journal` (emptied
 * after every move unless `clearAtBytes` says otherwise); its warnings are collected.
 */
async function start(
  extra = '',
  vault?: Vault,
  options: {
    journal?: boolean;
    clearAtBytes?: number;
    storage?: ReceiptStorage;
    hooks?: ReceiptHook[];
    adopt?: ReceiptJournal[];
    maxPendingInMemory?: number;
    dataDirectory?: string;
  } = {},
): Promise<{ log: ReceiptLog; vault: Vault; warnings: string[]; alerts: Array<Record<string, unknown>> }> {
  const loaded = configWith(extra);
  const realVault = vault ?? (await createVault(loaded, { env: { PATH: process.env.PATH } }));
  const warnings: string[] = [];
  const alerts: Array<Record<string, unknown>> = [];
  const { journal, clearAtBytes, storage, ...rest } = options;
  const log = await createReceiptLog({
    ...(storage ?? sqliteReceiptStorage(database)),
    vault: realVault,
    loaded,
    ...(journal ? { journal: openReceiptJournal(directory.path, 'main', { clearAtBytes: clearAtBytes ?? 1 }) } : {}),
    ...rest,
    warn: (message) => warnings.push(message),
    alert: (details, message) => alerts.push({ ...details, message }),
  });
  logs.push(log);
  return { log, vault: realVault, warnings, alerts };
}

/** The journal key of the logs `start` makes (their vault's digest key, created first when it has none). */
async function journalKey() {
  return journalKeyIn(await createVault(configWith(''), { env: { PATH: process.env.PATH } }));
}

/** The quarantine file of slot `main` in the test's directory, as lines (none when there is no file). */
function quarantineLines(): string[] {
  const path = join(directory.path, 'receipts-journal-main.quarantine.jsonl');
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : [];
}

/** The id of a process that has stopped (one this test started and waited for). */
function stoppedPid(): string {
  return spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
}

/** The journal file of slot `main` in the test's directory, as lines. */
function journalLines(): string[] {
  return readFileSync(join(directory.path, 'receipts-journal-main.jsonl'), 'utf8').split('\n').filter(Boolean);
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

/**
 * A log with a journal over a store that refuses every write (with `code`, or none) until `accept()`, as a
 * database locked by another process or on a full disk does.
 */
async function startRefused(code: string | undefined, options: { maxPendingInMemory?: number } = {}) {
  const { store: sqlite, unitOfWork } = sqliteReceiptStorage(database);
  let isRefusing = true;
  const refusing =
    <T extends unknown[], R>(method: (...args: T) => R) =>
    (...args: T): R => {
      if (isRefusing) throw Object.assign(new Error('database is locked'), code ? { code } : {});
      return method(...args);
    };
  const store = Object.assign(Object.create(sqlite) as typeof sqlite, {
    append: refusing(sqlite.append),
    setJournalMark: refusing(sqlite.setJournalMark),
  });
  const { log, warnings, alerts } = await start('', undefined, { journal: true, storage: { store, unitOfWork }, ...options });
  return {
    log,
    sqlite,
    warnings,
    alerts,
    accept: () => {
      isRefusing = false;
    },
  };
}

describe('the receipt log', () => {
  it('creates its digest and signing keys in the vault on first start and reuses them after', async () => {
    const first = await start();
    const digestKey = await first.vault.get(RECEIPTS_DIGEST_KEY_SECRET);
    expect(digestKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await first.vault.get(RECEIPTS_SIGNING_KEY_SECRET)).toContain('BEGIN PRIVATE KEY');
    const digest = (await first.log.record(call()))?.argumentsDigest;
    expect(digest).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    const second = await start('', first.vault);
    expect(second.log.verifierKey).toBe(first.log.verifierKey);
    expect((await second.log.record(call()))?.argumentsDigest).toBe(digest);
  });

  it('numbers receipts receipt-0, receipt-1, … and keys the argument digest (no plain SHA-256 of the arguments)', async () => {
    const { log } = await start();
    const a = await log.record(call({ orderId: 'ord_1' }));
    const b = await log.record(call({ orderId: 'ord_2' }));
    expect([a?.id, b?.id]).toEqual(['receipt-0', 'receipt-1']);
    expect(a?.argumentsDigest).not.toBe(b?.argumentsDigest);
    expect(a).not.toHaveProperty('arguments');
    expect(JSON.stringify(await log.store.get(0))).not.toContain('ord_1');
  });

  it('stores argument values only with receipts.storeArguments: true', async () => {
    const { log } = await start('receipts:\n  storeArguments: true');
    expect((await log.record(call({ orderId: 'ord_9' })))?.arguments).toEqual({ orderId: 'ord_9' });
  });

  it('signs a checkpoint every N receipts (receipts.checkpoint.everyReceipts)', async () => {
    const { log } = await start('receipts:\n  checkpoint: { everyReceipts: 4, everySeconds: 3600 }');
    for (let index = 0; index < 9; index += 1) await log.record(call());
    expect((await log.store.checkpoints()).map((checkpoint) => checkpoint.treeSize)).toEqual([4, 8]);
    const receipts = (await log.store.rows(0, 100)).map((row) => ({ receipt: JSON.parse(row.body), recordedLeafHash: row.leafHash }));
    expect(verifyReceiptLog({ receipts, checkpoints: await log.store.checkpoints(), trustedKeys: [log.verifierKey] })).toMatchObject({
      ok: true,
      checkpointsVerified: 2,
    });
  });

  it('signs a checkpoint after T seconds with new receipts (receipts.checkpoint.everySeconds)', async () => {
    const { log } = await start('receipts:\n  checkpoint: { everyReceipts: 1000, everySeconds: 0.2 }');
    await log.record(call());
    expect(await log.store.checkpoints()).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await log.store.checkpoints()).map((checkpoint) => checkpoint.treeSize)).toEqual([1]);
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
    // Without a journal the commit is what makes it durable: record fails.
    await expect(log.record(call())).rejects.toThrow('outbox full');
    isFull = false;
    expect(seen).toEqual(['receipt-1', 'receipt-2']);
    expect((await log.store.head()).size).toBe(2);
    expect(database.prepare('SELECT id FROM hook_rows').pluck().all()).toEqual(['receipt-1']);
    // The next receipt takes the number the rolled-back one did not keep.
    expect((await log.record(call()))?.id).toBe('receipt-2');
    expect(seen).toEqual(['receipt-1', 'receipt-2', 'receipt-2']);
  });

  it('with a journal, a receipt is in the journal when record returns and in the database on a later turn', async () => {
    const { log } = await start('', undefined, { journal: true });
    const committed = log.record(call());
    // Durable already: the whole line is in the file. Not in the database yet: that is after the answer.
    expect(journalLines().map((line) => JSON.parse(line))).toMatchObject([{ seq: 1, draft: { tool: 'get_order', outcome: 'allowed' } }]);
    // The receipt's fields and nothing else: no argument value, no result, in the journal either.
    const { draft } = JSON.parse(journalLines()[0]!) as { draft: Record<string, unknown> };
    expect(Object.keys(draft).sort()).toEqual(
      [
        'argumentsDigest',
        'clientId',
        'durationMs',
        'fingerprint',
        'login',
        'outcome',
        'person',
        'publication',
        'reason',
        'resultDigest',
        'session',
        'source',
        'time',
        'tool',
        'upstreamStatus',
      ].sort(),
    );
    expect(journalLines()[0]).not.toContain('ord_1');
    expect((await log.store.head()).size).toBe(0);
    expect((await committed)?.id).toBe('receipt-0');
    expect((await log.store.head()).size).toBe(1);
    // Moved: the database records how far, in the same transaction, and the journal starts again empty.
    expect(await log.store.journalMark('main')).toBe(1);
    expect(journalLines()).toEqual([]);
  });

  it('a journal whose entries are all in the database is emptied once it has grown to clearAtBytes, not after every move', async () => {
    const { log } = await start('', undefined, { journal: true, clearAtBytes: 2000 });
    const size = () => readFileSync(join(directory.path, 'receipts-journal-main.jsonl')).length;
    await log.record(call());
    expect(journalLines()).toHaveLength(1);
    const lineBytes = size();
    let recorded = 1;
    let sizeBefore = lineBytes;
    for (;;) {
      sizeBefore = size();
      await log.record(call());
      recorded += 1;
      if (size() === 0 || recorded === 100) break;
    }
    // Kept while under 2,000 bytes; emptied by the move after the line that took it to 2,000 or more.
    expect(sizeBefore).toBeLessThan(2000);
    expect(sizeBefore + lineBytes).toBeGreaterThanOrEqual(2000);
    expect(recorded).toBeGreaterThan(2);
    await log.record(call());
    expect(journalLines().map((line) => JSON.parse(line).seq)).toEqual([recorded + 1]);
    expect(await log.store.journalMark('main')).toBe(recorded + 1);
  });

  it('without a journal, a receipt is committed before the promise record returns resolves', async () => {
    const { log } = await start();
    const committed = await log.record(call());
    expect((await log.store.head()).size).toBe(1);
    expect(committed?.id).toBe('receipt-0');
  });

  it('receipts recorded in one turn move in one transaction, and one that cannot be written does not sink the others', async () => {
    const { log } = await start('', undefined, { journal: true });
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
    // Three calls answered in the same turn: one transaction for the three.
    const together = await Promise.all([log.record(call()), log.record(call()), log.record(call())]);
    expect(together.map((receipt) => receipt?.id)).toEqual(['receipt-0', 'receipt-1', 'receipt-2']);
    expect(commits).toEqual([['receipt-0', 'receipt-1', 'receipt-2']]);
    // The middle one's hook fails: the others are written (one by one after the shared transaction rolled back),
    // and the failed one is given up for good, so that a replay does not write it behind them later.
    refused = 'refused_tool';
    const results = await Promise.allSettled([log.record(call()), log.record({ ...call(), tool: 'refused_tool' }), log.record(call())]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(results.flatMap((result) => (result.status === 'fulfilled' ? [result.value?.id] : []))).toEqual(['receipt-3', 'receipt-4']);
    expect((await log.store.head()).size).toBe(5);
    expect((await log.store.list({ limit: 10 })).map((receipt) => receipt.tool)).not.toContain('refused_tool');
    expect(await log.store.journalMark('main')).toBe(6);
    expect(journalLines()).toEqual([]);
  });

  it('receipts recorded on turns soon after a move wait to join the next one (group commit); an idle receipt moves at once', async () => {
    const { log } = await start('', undefined, { journal: true });
    const units: number[] = [];
    log.addHook({ onReceipt() {}, afterCommit: (receipts) => void units.push(receipts.length) });
    // Idle: the receipt moves on the next turn, alone, as before.
    await log.record(call());
    expect(units).toEqual([1]);
    // Twelve calls answered on twelve turns right after that move (a gateway under load): without gathering, each
    // turn's move took its one receipt (twelve transactions); gathered, they share a few.
    const waiting: Array<Promise<unknown>> = [];
    for (let turn = 0; turn < 12; turn += 1) {
      waiting.push(log.record(call()));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(waiting);
    expect(units.slice(1).reduce((sum, size) => sum + size, 0)).toBe(12);
    expect(units.length - 1).toBeLessThanOrEqual(6);
    // MOVE_GATHER_RECEIPTS queued start a move without waiting for the time.
    const burst = Array.from({ length: MOVE_GATHER_RECEIPTS }, () => log.record(call()));
    await Promise.all(burst);
    expect(units.at(-1)).toBe(MOVE_GATHER_RECEIPTS);
    expect((await log.store.head()).size).toBe(1 + 12 + MOVE_GATHER_RECEIPTS);
  });

  it('a start moves what a stopped process left in its journal, once, in order, with the hooks, skipping a cut-off line', async () => {
    const storage = sqliteReceiptStorage(database);
    const { store } = storage;
    const drafts = ['first', 'second', 'third'].map((tool) => receiptDraft(tool));
    // The stopped process had moved entry 1 (receipt-0 and its mark) but not 2 and 3; its last write was cut short.
    await storage.unitOfWork.run((tx) => store.append(tx, [drafts[0]!], { journal: 'main', seq: 1 }));
    writeFileSync(join(directory.path, 'receipts-journal-main.jsonl'), `${journalText(await journalKey(), 'main', drafts)}{"seq":4,"dra`);
    writeFileSync(join(directory.path, 'receipts-journal-main.jsonl.lock'), `${stoppedPid()}\n`);
    const seen: string[] = [];
    const { log, warnings } = await start('', undefined, {
      journal: true,
      storage,
      hooks: [{ onReceipt: (receipt) => void seen.push(receipt.tool) }],
    });
    expect((await store.list({ limit: 10 })).map((receipt) => [receipt.id, receipt.tool])).toEqual([
      ['receipt-0', 'first'],
      ['receipt-1', 'second'],
      ['receipt-2', 'third'],
    ]);
    expect(seen).toEqual(['second', 'third']);
    // A write cut short by a crash is not forgery: skipped with a warning, not quarantined.
    expect(warnings).toEqual([expect.stringContaining('ends in a line cut short')]);
    expect(quarantineLines()).toEqual([]);
    // Signed at once, and the journal starts again empty, numbering after what it held.
    expect((await store.latestCheckpoint())?.treeSize).toBe(3);
    expect(journalLines()).toEqual([]);
    await log.record(call());
    expect(await store.journalMark('main')).toBe(4);
    expect(readFileSync(join(directory.path, 'receipts-journal-main.jsonl.lock'), 'utf8')).toBe(`${process.pid}\n`);
  });

  it('a start moves every outcome a call can have, "a person must act first" included, none quarantined', async () => {
    const storage = sqliteReceiptStorage(database);
    const outcomes = ['allowed', 'denied', 'action-required', 'error'] as const;
    const drafts = outcomes.map((outcome) =>
      receiptDraft(`tool-${outcome}`, { outcome, reason: outcome === 'allowed' ? null : 'PERSON_ACTION_REQUIRED' }),
    );
    writeFileSync(join(directory.path, 'receipts-journal-main.jsonl'), journalText(await journalKey(), 'main', drafts));
    writeFileSync(join(directory.path, 'receipts-journal-main.jsonl.lock'), `${stoppedPid()}\n`);
    await start('', undefined, { journal: true, storage });
    expect((await storage.store.list({ limit: 10 })).map((receipt) => receipt.outcome)).toEqual([...outcomes]);
    expect(quarantineLines()).toEqual([]);
  });

  it('a start quarantines authentic lines that are not entries (wrong types, bad numbers) and a changed line; moves the rest', async () => {
    const key = await journalKey();
    const good = (tool: string) => receiptDraft(tool);
    // Each with a valid MAC (as if the gateway had written it): the shape is checked after the MAC.
    const signed = (text: string) => authenticatedLine(key, 'main', text.endsWith('}') ? text.slice(0, -1) : text);
    const lines = [
      JSON.stringify({ seq: 1, draft: good('first') }),
      JSON.stringify({ seq: '2', draft: good('seq_as_text') }),
      JSON.stringify({ seq: 0, draft: good('seq_zero') }),
      JSON.stringify({ seq: 3, draft: [good('draft_as_list')] }),
      JSON.stringify({ seq: 4, draft: { ...good('x'), tool: 123 } }),
      JSON.stringify({ seq: 5, draft: { ...good('maybe'), outcome: 'maybe' } }),
      JSON.stringify({ seq: 6, draft: { ...good('status'), upstreamStatus: 200.5 } }),
      JSON.stringify({ seq: 7, draft: { ...good('person'), person: { name: 'alice' } } }),
      // `__proto__` as a key of the line and of the draft: an own property, read by nobody.
      `{"seq":8,"__proto__":{"polluted":true},"draft":${JSON.stringify(good('with_proto')).slice(0, -1)},"__proto__":{"tool":"x"}}}`,
      `{"seq":9,"draft":${'['.repeat(100_000)}`,
      JSON.stringify({ seq: 10, draft: good('last') }),
    ].map(signed);
    // One byte of a genuine line changed (to one that is not UTF-8): the MAC no longer matches; kept byte for byte.
    const changed = Buffer.from(signed(JSON.stringify({ seq: 11, draft: good('changed_#') })));
    changed[changed.lastIndexOf('#')] = 0xff;
    writeFileSync(join(directory.path, 'receipts-journal-main.jsonl'), Buffer.concat([Buffer.from(lines.join('')), changed]));
    const { log, alerts } = await start('', undefined, { journal: true });
    expect((await log.store.list({ limit: 20 })).map((receipt) => receipt.tool)).toEqual(['first', 'with_proto', 'last']);
    expect(alerts).toEqual([
      expect.objectContaining({
        code: 'RECEIPT_JOURNAL_LINE_QUARANTINED',
        journal: 'main',
        lines: 9,
        reasons: { malformed: 8, 'wrong-mac': 1 },
      }),
    ]);
    const quarantine = readFileSync(join(directory.path, 'receipts-journal-main.quarantine.jsonl'));
    expect(quarantine.includes(changed)).toBe(true);
    expect(quarantineLines()).toHaveLength(9);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(await log.store.journalMark('main')).toBe(10);
  });

  it('a start reads a journal larger than its read buffer in chunks, a character cut by a chunk included', async () => {
    const storage = sqliteReceiptStorage(database);
    const { store } = storage;
    // Tools of three-byte characters, the first one padded so that the first 64 KiB chunk ends inside one.
    const tool = (index: number, padding: number) => `${index === 0 ? 'x'.repeat(padding) : ''}${'工'.repeat(60)}_${index}`;
    const key = await journalKey();
    const text = (padding: number) =>
      journalText(
        key,
        'main',
        Array.from({ length: 2500 }, (_, index) => receiptDraft(tool(index, padding))),
      );
    // Padding the first line by p bytes moves byte 65536 - p of the unpadded file to 65536.
    const unpadded = Buffer.from(text(0));
    const padding = Array.from({ length: 2000 }, (_, candidate) => candidate).find(
      (candidate) => (unpadded[65536 - candidate]! & 0xc0) === 0x80,
    )!;
    const file = Buffer.from(text(padding));
    expect(file[65536]! & 0xc0).toBe(0x80);
    expect(file.length).toBeGreaterThan(3 * 65536);
    writeFileSync(join(directory.path, 'receipts-journal-main.jsonl'), file);
    const { warnings } = await start('', undefined, { journal: true, storage });
    expect(warnings).toEqual([]);
    expect((await store.head()).size).toBe(2500);
    expect((await store.list({ limit: 1000 })).map((receipt) => receipt.tool)).toEqual(
      Array.from({ length: 1000 }, (_, index) => tool(index, padding)),
    );
    expect((await store.list({ limit: 1000, afterIndex: 1499 })).map((receipt) => receipt.tool)).toEqual(
      Array.from({ length: 1000 }, (_, index) => tool(1500 + index, padding)),
    );
    expect(await store.journalMark('main')).toBe(2500);
  });

  it("lines added to a stopped gateway's journal are quarantined with a code; the genuine ones move in, in order", async () => {
    const key = await journalKey();
    const genuine = (seq: number, tool: string) => journalText(key, 'main', [receiptDraft(tool)], seq);
    const forged = JSON.stringify({ seq: 3, draft: receiptDraft('admin_purge') });
    const lines = [
      genuine(1, 'first'),
      genuine(2, 'second'),
      // Between genuine lines: the shape of an earlier version's line (no MAC), one with a MAC made up, and a
      // genuine line of worker-2's journal (its MAC is bound to that slot).
      `${forged}\n`,
      `${forged.slice(0, -1)},"mac":"${'A'.repeat(43)}"}\n`,
      journalText(key, 'worker-2', [receiptDraft('from_worker_2')], 3),
      genuine(3, 'third'),
      genuine(4, 'fourth'),
    ];
    writeFileSync(join(directory.path, 'receipts-journal-main.jsonl'), lines.join(''));
    const { log, alerts } = await start('', undefined, { journal: true });
    expect((await log.store.list({ limit: 10 })).map((receipt) => receipt.tool)).toEqual(['first', 'second', 'third', 'fourth']);
    expect(alerts).toEqual([
      expect.objectContaining({
        code: 'RECEIPT_JOURNAL_LINE_QUARANTINED',
        journal: 'main',
        lines: 3,
        reasons: { 'missing-mac': 1, 'wrong-mac': 2 },
        file: join(directory.path, 'receipts-journal-main.quarantine.jsonl'),
        message: expect.stringContaining('not moved in'),
      }),
    ]);
    expect(quarantineLines()).toEqual(lines.slice(2, 5).map((line) => line.slice(0, -1)));
    // Signed at once over the genuine four; the log verifies.
    expect((await log.store.latestCheckpoint())?.treeSize).toBe(4);
    const receipts = (await log.store.rows(0, 100)).map((row) => ({ receipt: JSON.parse(row.body), recordedLeafHash: row.leafHash }));
    expect(verifyReceiptLog({ receipts, checkpoints: await log.store.checkpoints(), trustedKeys: [log.verifierKey] })).toMatchObject({
      ok: true,
    });
    expect(await log.store.journalMark('main')).toBe(4);
  });

  it('a genuine line appended again makes no second receipt: behind its original (replayed) or once moved in (the mark)', async () => {
    const key = await journalKey();
    const [first, second, third] = ['first', 'second', 'third'].map((tool, index) =>
      journalText(key, 'main', [receiptDraft(tool)], index + 1),
    );
    // A copy of entry 2 behind entry 3, and again at the end: its number does not grow.
    writeFileSync(join(directory.path, 'receipts-journal-main.jsonl'), `${first}${second}${third}${second}${first}`);
    const { log, alerts } = await start('', undefined, { journal: true });
    expect((await log.store.list({ limit: 10 })).map((receipt) => receipt.tool)).toEqual(['first', 'second', 'third']);
    expect(alerts).toEqual([expect.objectContaining({ lines: 2, reasons: { replayed: 2 } })]);
    expect(quarantineLines()).toEqual([second!.trim(), first!.trim()]);
    await log.close();
    logs = [];
    // Stopped with everything in: copies of moved lines in a journal of their own are covered by the mark.
    writeFileSync(join(directory.path, 'receipts-journal-main.jsonl'), `${second}${third}`);
    const { log: next } = await start('', undefined, { journal: true });
    expect((await next.store.list({ limit: 10 })).map((receipt) => receipt.tool)).toEqual(['first', 'second', 'third']);
    expect((await next.record(call()))?.id).toBe('receipt-3');
    expect(await next.store.journalMark('main')).toBe(4);
  });

  it('a line appended while the gateway runs is quarantined when the backlog is read back, once however often it is read', async () => {
    const { log, sqlite, alerts, accept } = await startRefused('SQLITE_BUSY', { maxPendingInMemory: 0 });
    await log.record({ ...call(), tool: 'before' });
    appendFileSync(
      join(directory.path, 'receipts-journal-main.jsonl'),
      `${JSON.stringify({ seq: 2, draft: receiptDraft('admin_purge') })}\n`,
    );
    await log.record({ ...call(), tool: 'after' });
    accept();
    // Moved by the next retry (a second on): waited for, at most ten.
    for (let waited = 0; (await sqlite.head()).size < 2 && waited < 10_000; waited += 50)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await sqlite.list({ limit: 10 })).map((receipt) => receipt.tool)).toEqual(['before', 'after']);
    expect(alerts).toEqual([expect.objectContaining({ reasons: { 'missing-mac': 1 } })]);
    expect(quarantineLines()).toHaveLength(1);
    // Read again (the journal holds less than clearAtBytes): the line is skipped, not quarantined or reported again.
    const journal = openReceiptJournal(directory.path, 'worker-9');
    writeFileSync(join(directory.path, 'receipts-journal-worker-9.jsonl'), 'not a line of ours\n');
    const key = await journalKey();
    const reported: unknown[] = [];
    for (let read = 0; read < 2; read += 1) {
      journal.readEntries(
        key,
        10,
        () => undefined,
        (counts) => reported.push(counts),
      );
    }
    expect(reported).toEqual([{ 'missing-mac': 1 }]);
    journal.close({ removeFile: true });
    expect(readFileSync(join(directory.path, 'receipts-journal-worker-9.quarantine.jsonl'), 'utf8')).toBe('not a line of ours\n');
  });

  it('a line appended while the gateway runs is screened before the journal is emptied or removed, not dropped unseen', async () => {
    const journalPath = join(directory.path, 'receipts-journal-main.jsonl');
    const foreign = (tool: string) => `${JSON.stringify({ seq: 99, draft: receiptDraft(tool) })}\n`;
    // Emptied after every move (clearAtBytes 1): the line appended after the first receipt is screened first.
    const { log, alerts } = await start('', undefined, { journal: true });
    await log.record(call());
    appendFileSync(journalPath, foreign('appended_while_running'));
    await log.record(call());
    expect(journalLines()).toEqual([]);
    expect(alerts).toEqual([expect.objectContaining({ code: 'RECEIPT_JOURNAL_LINE_QUARANTINED', reasons: { 'missing-mac': 1 } })]);
    // Removed at a clean close: screened first too.
    appendFileSync(journalPath, foreign('appended_before_the_stop'));
    await log.close();
    logs = [];
    expect(existsSync(journalPath)).toBe(false);
    expect(alerts).toHaveLength(2);
    expect(quarantineLines().map((line) => (JSON.parse(line) as { draft: { tool: string } }).draft.tool)).toEqual([
      'appended_while_running',
      'appended_before_the_stop',
    ]);
    expect((await log.store.list({ limit: 10 })).map((receipt) => receipt.tool)).toEqual(['get_order', 'get_order']);
  });

  it('a vault that cannot keep the digest key: no journal (a receipt commits in record); a left journal is screened', async () => {
    const loaded = configWith('vault:\n  provider: env');
    const vault = await createVault(loaded, { env: {} });
    writeFileSync(
      join(directory.path, 'receipts-journal-main.jsonl'),
      `${JSON.stringify({ seq: 1, draft: receiptDraft('admin_purge') })}\n`,
    );
    const { log, warnings, alerts } = await start('vault:\n  provider: env', vault, { journal: true });
    expect(warnings).toContainEqual(expect.stringContaining('the receipt journal is off'));
    expect(alerts).toEqual([expect.objectContaining({ code: 'RECEIPT_JOURNAL_LINE_QUARANTINED', reasons: { 'missing-mac': 1 } })]);
    expect((await log.store.head()).size).toBe(0);
    expect(existsSync(join(directory.path, 'receipts-journal-main.jsonl'))).toBe(false);
    const committed = await log.record(call());
    expect((await log.store.head()).size).toBe(1);
    expect(committed?.id).toBe('receipt-0');
    expect(journalSlots(directory.path)).toEqual([]);
  });

  it('closed while receipts wait in the journal only, the log keeps the journal for the next start, which moves them', async () => {
    // None kept in memory: the receipts are in the journal only, and nothing is queued when the log closes.
    const { log } = await startRefused('SQLITE_BUSY', { maxPendingInMemory: 0 });
    expect(await Promise.all([log.record({ ...call(), tool: 'first' }), log.record({ ...call(), tool: 'second' })])).toEqual([
      undefined,
      undefined,
    ]);
    await log.close();
    logs = [];
    expect(journalLines().map((line) => (JSON.parse(line) as { draft: { tool: string } }).draft.tool)).toEqual(['first', 'second']);
    const { log: next } = await start('', undefined, { journal: true });
    expect((await next.store.list({ limit: 10 })).map((receipt) => receipt.tool)).toEqual(['first', 'second']);
  });

  it('past maxPendingInMemory waiting receipts, later ones wait in the journal only and are read back from it, in order', async () => {
    const { log, sqlite, warnings, accept } = await startRefused('SQLITE_BUSY', { maxPendingInMemory: 2 });
    const recorded = Array.from({ length: 5 }, (_, index) => log.record({ ...call(), tool: `call_${index}` }));
    // The first two are kept in memory; the other three resolve at once: they wait in the journal only.
    expect(await Promise.all(recorded.slice(2))).toEqual([undefined, undefined, undefined]);
    expect(warnings).toEqual([expect.stringContaining('the next ones wait in the journal only')]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(journalLines()).toHaveLength(5);
    accept();
    expect((await Promise.all(recorded.slice(0, 2))).map((receipt) => receipt?.id)).toEqual(['receipt-0', 'receipt-1']);
    // Read back from the journal right after the queued ones, in the order they were recorded.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await sqlite.list({ limit: 10 })).map((receipt) => receipt.tool)).toEqual(['call_0', 'call_1', 'call_2', 'call_3', 'call_4']);
    expect(await sqlite.journalMark('main')).toBe(5);
    expect(journalLines()).toEqual([]);
    // Back to normal: the next receipt is kept in memory and moved as usual.
    expect((await log.record(call()))?.id).toBe('receipt-5');
  });

  it('the first process also moves the journals of slots nobody serves from now, then removes them', async () => {
    const storage = sqliteReceiptStorage(database);
    const { store } = storage;
    const stopped = stoppedPid();
    const key = await journalKey();
    // Two workers ran last time; now one process serves. Worker 2's journal still holds two receipts.
    for (const [slot, tools] of [
      ['worker-1', []],
      ['worker-2', ['from_worker_2_a', 'from_worker_2_b']],
    ] as const) {
      writeFileSync(
        join(directory.path, `receipts-journal-${slot}.jsonl`),
        journalText(
          key,
          slot,
          tools.map((tool) => receiptDraft(tool)),
        ),
      );
      writeFileSync(join(directory.path, `receipts-journal-${slot}.jsonl.lock`), `${stopped}\n`);
    }
    expect(journalSlots(directory.path).sort()).toEqual(['worker-1', 'worker-2']);
    const adopt = journalSlots(directory.path).map((slot) => openReceiptJournal(directory.path, slot));
    const { log } = await start('', undefined, { journal: true, storage, adopt });
    expect((await store.list({ limit: 10 })).map((receipt) => receipt.tool)).toEqual(['from_worker_2_a', 'from_worker_2_b']);
    expect(await store.journalMark('worker-2')).toBe(2);
    expect(journalSlots(directory.path)).toEqual(['main']);
    expect(existsSync(join(directory.path, 'receipts-journal-worker-2.jsonl.lock'))).toBe(false);
    await log.close();
    logs = [];
    expect(() => log.record(call())).toThrow('closed');
  });

  it('a starting process claims its own journal and the free journals of other slots, leaving one a running process holds', () => {
    for (const slot of ['worker-2', 'worker-3']) writeFileSync(join(directory.path, `receipts-journal-${slot}.jsonl`), '');
    writeFileSync(join(directory.path, 'receipts-journal-worker-3.jsonl.lock'), `${process.ppid}\n`);
    const warnings: string[] = [];
    const claimed = claimJournals({
      directory: directory.path,
      slot: 'worker-1',
      usesJournal: true,
      adoptsOthers: true,
      warn: (message) => warnings.push(message),
    });
    expect(claimed.journal?.name).toBe('worker-1');
    expect(claimed.adopt.map((journal) => journal.name)).toEqual(['worker-2']);
    expect(warnings).toEqual([expect.stringContaining("'worker-3' is left alone")]);
    claimed.release();
    // Released: claimable again; with receipts.journal: false and no file of its own, nothing of its own is claimed.
    const again = claimJournals({ directory: directory.path, slot: 'main', usesJournal: false, adoptsOthers: false, warn: () => {} });
    expect(again.journal).toBeUndefined();
    expect(again.adopt).toEqual([]);
  });

  it('a journal slot held by a running process is refused; closing removes the journal once it is all in the database', async () => {
    writeFileSync(join(directory.path, 'receipts-journal-main.jsonl.lock'), `${process.ppid}\n`);
    expect(() => openReceiptJournal(directory.path, 'main')).toThrow(
      expect.objectContaining({ code: 'RECEIPT_JOURNAL_IN_USE', message: expect.stringContaining(`pid ${process.ppid}`) }),
    );
    // A lock with this process's id that this process does not hold: left by an earlier process with the same id.
    writeFileSync(join(directory.path, 'receipts-journal-main.jsonl.lock'), `${process.pid}\n`);
    const { log } = await start('', undefined, { journal: true });
    // Held now: a second writer in this same process is refused too.
    expect(() => openReceiptJournal(directory.path, 'main')).toThrow(expect.objectContaining({ code: 'RECEIPT_JOURNAL_IN_USE' }));
    await log.record(call());
    await log.close();
    logs = [];
    expect(existsSync(join(directory.path, 'receipts-journal-main.jsonl'))).toBe(false);
    expect(existsSync(join(directory.path, 'receipts-journal-main.jsonl.lock'))).toBe(false);
  });

  it.each([
    ['SQLITE_FULL', 'at once'],
    [undefined, 'after trying them one by one and failing to give any up'],
  ])(
    'while the database refuses receipts (%s), they wait in the journal and in memory (%s), and move once it takes them again',
    async (code: string | undefined, _how: string) => {
      const { log, sqlite, warnings, accept } = await startRefused(code);
      const committed = [log.record(call()), log.record(call())];
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(warnings).toEqual([expect.stringContaining('receipts wait in the journal')]);
      expect(journalLines()).toHaveLength(2);
      expect((await sqlite.head()).size).toBe(0);
      accept();
      expect((await Promise.all(committed)).map((receipt) => receipt?.id)).toEqual(['receipt-0', 'receipt-1']);
      expect(journalLines()).toEqual([]);
    },
  );

  it('a checkpoint that fails after a commit is a warning, not a crash: the receipt is written and its call answered', async () => {
    const loaded = configWith('receipts:\n  checkpoint: { everyReceipts: 1, everySeconds: 3600 }');
    const vault = await createVault(loaded, { env: { PATH: process.env.PATH } });
    const { store: sqlite, unitOfWork } = sqliteReceiptStorage(database);
    const store = Object.assign(Object.create(sqlite) as typeof sqlite, {
      addCheckpoint() {
        throw new Error('disk full');
      },
    });
    const warnings: string[] = [];
    const log = await createReceiptLog({ store, unitOfWork, vault, loaded, warn: (message) => warnings.push(message) });
    logs.push(log);
    expect((await log.record(call()))?.id).toBe('receipt-0');
    expect(warnings).toEqual(['receipt checkpoint failed: disk full']);
    await log.close();
    expect(warnings.at(-1)).toBe('final receipt checkpoint failed: disk full');
    expect((await sqlite.head()).size).toBe(1);
  });
});

describe('the anchor: the last signed checkpoint outside the database', () => {
  const cadence = 'receipts:\n  checkpoint: { everyReceipts: 2, everySeconds: 3600 }';

  /** Someone with the database file but no key: receipt `index` edited, its leaf hash and the tree head recomputed. */
  function rewrite(index: number): void {
    const body = database.prepare('SELECT body FROM receipts WHERE leaf_index = ?').pluck().get(index) as string;
    const text = receiptLeafText({ ...(JSON.parse(body) as Receipt), person: 'mallory' });
    database
      .prepare('UPDATE receipts SET body = ?, leaf_hash = ?, person = ? WHERE leaf_index = ?')
      .run(text, leafHash(text), 'mallory', index);
    const hashes = database.prepare('SELECT leaf_hash FROM receipts ORDER BY leaf_index').pluck().all() as Buffer[];
    const edge = hashes.reduce<Buffer[]>((edge, hash, position) => appendToEdge(edge, position, hash), []);
    database.prepare('UPDATE receipt_tree SET size = ?, edge = ? WHERE id = 1').run(hashes.length, Buffer.concat(edge));
  }

  it('each checkpoint is also written to the data directory (whole, fsynced) and to a writable vault', async () => {
    const { log, vault } = await start(cadence, undefined, { dataDirectory: directory.path });
    for (let index = 0; index < 5; index += 1) await log.record(call());
    await log.anchor.settled();
    const fromFile = JSON.parse(readFileSync(join(directory.path, RECEIPTS_ANCHOR_FILE), 'utf8')) as { treeSize: number; note: string };
    const fromVault = JSON.parse((await vault.get(RECEIPTS_ANCHOR_SECRET))!) as { treeSize: number; note: string };
    expect(fromFile.treeSize).toBe(4);
    expect(fromFile.note).toBe((await log.store.latestCheckpoint())!.note);
    expect(fromVault).toEqual(fromFile);
  });

  it('a start refuses a database rewritten below the anchor, from the vault copy alone too, naming the size', async () => {
    const first = await start(cadence, undefined, { dataDirectory: directory.path });
    for (let index = 0; index < 6; index += 1) await first.log.record(call());
    await first.log.close();
    await first.log.anchor.settled();
    database.prepare('DELETE FROM receipt_checkpoints').run();
    rewrite(1);
    await expect(start(cadence, first.vault, { dataDirectory: directory.path })).rejects.toMatchObject({
      code: 'RECEIPTS_ANCHOR_MISMATCH',
      message: expect.stringMatching(/signed checkpoint of size 6 .*receipt-0\.\.receipt-3/),
    });
    // The data directory's copy removed too: the vault's still holds the database to the signed history.
    rmSync(join(directory.path, RECEIPTS_ANCHOR_FILE));
    await expect(start(cadence, first.vault, { dataDirectory: directory.path })).rejects.toMatchObject({
      code: 'RECEIPTS_ANCHOR_MISMATCH',
      message: expect.stringContaining(`signed checkpoint of size 6 (kept in the vault entry '${RECEIPTS_ANCHOR_SECRET}')`),
    });
    expect(database.prepare('SELECT COUNT(*) FROM receipt_checkpoints').pluck().get()).toBe(0);
  });

  it('checkpoint hooks (events) run once per new row, only over a tree that extends the anchor; a rolled-back row is redone', async () => {
    const evented: number[] = [];
    let isFull = false;
    const hook: ReceiptHook = {
      onReceipt: () => undefined,
      onCheckpoint(checkpoint) {
        if (isFull) throw new Error('outbox full');
        evented.push(checkpoint.treeSize);
      },
    };
    const { log, warnings } = await start(cadence, undefined, { dataDirectory: directory.path, hooks: [hook] });
    for (let index = 0; index < 2; index += 1) await log.record(call());
    expect(evented).toEqual([2]);
    // The hook fails: the row and its events roll back, after the anchor was written.
    isFull = true;
    for (let index = 0; index < 2; index += 1) await log.record(call());
    expect(warnings).toEqual(['receipt checkpoint failed: outbox full']);
    expect(log.anchor.latest()?.treeSize).toBe(4);
    expect((await log.store.latestCheckpoint())?.treeSize).toBe(2);
    isFull = false;
    // The next try stores the checkpoint of that tree, with its events, and the same note as the anchor.
    expect((await log.checkpoint())?.treeSize).toBe(4);
    expect(evented).toEqual([2, 4]);
    expect((await log.store.latestCheckpoint())?.note).toBe(log.anchor.latest()?.note);
    // Nothing more for the same tree.
    expect((await log.checkpoint())?.treeSize).toBe(4);
    expect(evented).toEqual([2, 4]);
    // A tree inconsistent with the anchor (a receipt after it rewritten in the file): neither signed, nor stored,
    // nor evented.
    await log.record(call());
    rewrite(4);
    await expect(log.checkpoint()).rejects.toThrow(expect.objectContaining({ code: 'RECEIPTS_ANCHOR_MISMATCH' }));
    expect(evented).toEqual([2, 4]);
    expect((await log.store.checkpoints()).map((checkpoint) => checkpoint.treeSize)).toEqual([2, 4]);
    expect(log.anchor.latest()?.treeSize).toBe(4);
  });

  it('processes sharing one database (--workers) sign in turn over the newest anchor, and refuse a tree it does not extend', async () => {
    const other = openDatabase(join(directory.path, 'gateway.db'), receiptMigrations);
    try {
      const a = await start(cadence, undefined, { dataDirectory: directory.path });
      const b = await start(cadence, a.vault, { dataDirectory: directory.path, storage: sqliteReceiptStorage(other) });
      for (let index = 0; index < 3; index += 1) await a.log.record(call());
      for (let index = 0; index < 3; index += 1) await b.log.record(call());
      expect((await a.log.checkpoint())?.treeSize).toBe(6);
      await b.log.record(call());
      expect((await b.log.checkpoint())?.treeSize).toBe(7);
      expect(a.log.anchor.latest()?.treeSize).toBe(7);
      // Process b appends and signs; then someone rewrites a receipt b signed that a has not checked yet.
      await b.log.record(call());
      expect((await b.log.checkpoint())?.treeSize).toBe(8);
      rewrite(7);
      await a.log.record(call());
      await expect(a.log.checkpoint()).rejects.toThrow(
        expect.objectContaining({ code: 'RECEIPTS_ANCHOR_MISMATCH', message: expect.stringContaining('size 8') }),
      );
      expect((await a.log.store.latestCheckpoint())?.treeSize).toBe(8);
      const anchorFile = JSON.parse(readFileSync(join(directory.path, RECEIPTS_ANCHOR_FILE), 'utf8')) as { treeSize: number };
      expect(anchorFile.treeSize).toBe(8);
    } finally {
      for (const log of logs.splice(0)) {
        await log.close();
        await log.anchor.settled();
      }
      other.close();
    }
  });
});
