import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { formatCheckpoint, rawPublicKey, signNote, verifierKey } from './checkpoint.js';
import { leafHash, rootOf } from './merkle.js';
import { receiptLeafBytes, type Receipt } from './receipt.js';
import { receiptAt } from '../test/support/receipt-fixture.js';
import { verifyReceiptLog } from './receipt-log-verify.js';

const { privateKey } = generateKeyPairSync('ed25519');
const origin = 'test.example/receipts';
const key = verifierKey(origin, rawPublicKey(privateKey));

function checkpointOf(receipts: Receipt[], size: number) {
  const root = rootOf(receipts.slice(0, size).map((entry) => leafHash(receiptLeafBytes(entry))));
  return { note: signNote(formatCheckpoint({ origin, size, rootHash: root }), origin, privateKey), verifierKey: key };
}

const receipts = Array.from({ length: 10 }, (_, index) => receiptAt(index));
const checkpoints = [checkpointOf(receipts, 4), checkpointOf(receipts, 10)];

describe('verifyReceiptLog', () => {
  it('passes an untouched log, checking every checkpoint', () => {
    const report = verifyReceiptLog({ receipts: receipts.map((entry) => ({ receipt: entry })), checkpoints, trustedKeys: [key] });
    expect(report).toMatchObject({ ok: true, treeSize: 10, checkpointsVerified: 2 });
  });

  it('names a deleted receipt', () => {
    const report = verifyReceiptLog({
      receipts: receipts.filter((entry) => entry.index !== 6).map((entry) => ({ receipt: entry })),
      checkpoints,
      trustedKeys: [key],
    });
    expect(report).toMatchObject({ ok: false, firstBrokenReceipt: 'receipt-6' });
  });

  it('names an edited receipt by its recorded leaf hash, else the checkpoint range it breaks', () => {
    const entries = receipts.map((entry) => ({ receipt: entry, recordedLeafHash: leafHash(receiptLeafBytes(entry)) }));
    entries[7] = { ...entries[7]!, receipt: { ...receipts[7]!, outcome: 'denied' } };
    expect(verifyReceiptLog({ receipts: entries, checkpoints, trustedKeys: [key] })).toMatchObject({
      ok: false,
      firstBrokenReceipt: 'receipt-7',
    });
    const withoutHashes = entries.map(({ receipt: entry }) => ({ receipt: entry }));
    const report = verifyReceiptLog({ receipts: withoutHashes, checkpoints, trustedKeys: [key] });
    expect(report).toMatchObject({ ok: false, firstBrokenReceipt: 'receipt-4' });
    expect(report.problems.join('\n')).toContain('receipt-4..receipt-9');
  });

  it('refuses a checkpoint by an untrusted key or with a broken signature', () => {
    const other = generateKeyPairSync('ed25519').privateKey;
    const otherKey = verifierKey(origin, rawPublicKey(other));
    const plain = receipts.map((entry) => ({ receipt: entry }));
    expect(verifyReceiptLog({ receipts: plain, checkpoints, trustedKeys: [otherKey] }).ok).toBe(false);
    const forged = [{ ...checkpoints[1]!, note: checkpoints[1]!.note.replace('\n10\n', '\n9\n') }];
    expect(verifyReceiptLog({ receipts: plain, checkpoints: forged, trustedKeys: [key] }).ok).toBe(false);
  });

  it('names the key an untrusted checkpoint claims, and never trusts it', () => {
    const other = generateKeyPairSync('ed25519').privateKey;
    const otherKey = verifierKey(origin, rawPublicKey(other));
    const root = rootOf(receipts.map((entry) => leafHash(receiptLeafBytes(entry))));
    const resigned = [{ note: signNote(formatCheckpoint({ origin, size: 10, rootHash: root }), origin, other), verifierKey: otherKey }];
    const report = verifyReceiptLog({ receipts: receipts.map((entry) => ({ receipt: entry })), checkpoints: resigned, trustedKeys: [key] });
    expect(report).toMatchObject({ ok: false, checkpointsVerified: 0 });
    expect(report.problems).toContain(`the checkpoint of size 10 is signed by no trusted key (it names ${otherKey})`);
  });

  it('fails with receipts after the last verified checkpoint past the bound, or with none verified at all', () => {
    const plain = receipts.map((entry) => ({ receipt: entry }));
    const within = verifyReceiptLog({ receipts: plain, checkpoints: [checkpoints[0]!], trustedKeys: [key], uncoveredBound: 6 });
    expect(within).toMatchObject({ ok: true, uncoveredReceipts: 6 });
    const past = verifyReceiptLog({ receipts: plain, checkpoints: [checkpoints[0]!], trustedKeys: [key], uncoveredBound: 5 });
    expect(past).toMatchObject({ ok: false, uncoveredReceipts: 6, firstBrokenReceipt: 'receipt-4' });
    expect(past.problems).toEqual(['6 receipts without a checkpoint (receipt-4..receipt-9): at most 5 may wait for the next one']);
    const none = verifyReceiptLog({ receipts: plain, checkpoints: [], trustedKeys: [key] });
    expect(none).toMatchObject({ ok: false, uncoveredReceipts: 10, firstBrokenReceipt: 'receipt-0' });
    expect(none.problems[0]).toContain('10 receipts without a checkpoint');
  });

  it('checks collected checkpoints: names the one a rewritten log does not match, and one whose data differs from its note', () => {
    const collected = checkpoints.map((checkpoint, position) => ({ id: `evt-${position}`, note: checkpoint.note }));
    const honest = verifyReceiptLog({
      receipts: receipts.map((entry) => ({ receipt: entry })),
      checkpoints,
      trustedKeys: [key],
      collected,
    });
    expect(honest).toMatchObject({ ok: true, collectedVerified: 2 });
    // Rewritten at receipt 6 and signed again with the same key: consistent on its own, not with what was collected.
    const rewritten = receipts.map((entry) => (entry.index === 6 ? { ...entry, person: 'mallory' } : entry));
    const forked = verifyReceiptLog({
      receipts: rewritten.map((entry) => ({ receipt: entry })),
      checkpoints: [checkpointOf(rewritten, 4), checkpointOf(rewritten, 10)],
      trustedKeys: [key],
      collected,
    });
    expect(forked).toMatchObject({ ok: false, checkpointsVerified: 2, collectedVerified: 1, firstBrokenReceipt: 'receipt-4' });
    expect(forked.problems).toEqual([
      'checkpoint event evt-1 (tree size 10): the log is not consistent with it (its tree at size 10 has another root): ' +
        'the log was rewritten in receipt-4..receipt-9 after this checkpoint was signed',
    ]);
    const lying = verifyReceiptLog({
      receipts: receipts.map((entry) => ({ receipt: entry })),
      checkpoints,
      trustedKeys: [key],
      collected: [{ id: 'evt-x', note: checkpoints[0]!.note, treeSize: 5 }],
    });
    expect(lying.problems).toEqual(['checkpoint event evt-x (tree size 4): its data does not say what its signed note says']);
  });
});
