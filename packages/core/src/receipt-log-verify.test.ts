import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { formatCheckpoint, rawPublicKey, signNote, verifierKey } from './checkpoint.js';
import { leafHash, rootOf } from './merkle.js';
import { receiptLeafBytes, type Receipt } from './receipt.js';
import { verifyReceiptLog } from './receipt-log-verify.js';

const { privateKey } = generateKeyPairSync('ed25519');
const origin = 'test.example/receipts';
const key = verifierKey(origin, rawPublicKey(privateKey));

function receipt(index: number): Receipt {
  return {
    id: `receipt-${index}`,
    index,
    time: new Date(1_700_000_000_000 + index).toISOString(),
    session: 'session-1',
    person: 'p',
    clientId: 'c',
    tool: 't',
    source: 's',
    publication: 'publication-1',
    fingerprint: 'sha256:x',
    login: null,
    outcome: 'allowed',
    reason: null,
    upstreamStatus: 200,
    durationMs: 1.5,
    argumentsDigest: 'hmac-sha256:00',
    resultDigest: null,
  };
}

function checkpointOf(receipts: Receipt[], size: number) {
  const root = rootOf(receipts.slice(0, size).map((entry) => leafHash(receiptLeafBytes(entry))));
  return { note: signNote(formatCheckpoint({ origin, size, rootHash: root }), origin, privateKey), verifierKey: key };
}

const receipts = Array.from({ length: 10 }, (_, index) => receipt(index));
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
    expect(verifyReceiptLog({ receipts: entries, checkpoints, trustedKeys: [key] })).toMatchObject({ ok: false, firstBrokenReceipt: 'receipt-7' });
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
});
