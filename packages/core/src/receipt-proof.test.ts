import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AdminReceiptProof } from './admin-api.js';
import { formatCheckpoint, rawPublicKey, signNote, verifierKey } from './checkpoint.js';
import { inclusionProof, leafHash, rootOf } from './merkle.js';
import { receiptLeafBytes } from './receipt.js';
import { receiptAt } from '../test/support/receipt-fixture.js';
import { receiptProofHolds } from './receipt-proof.js';

const { privateKey } = generateKeyPairSync('ed25519');
const other = generateKeyPairSync('ed25519').privateKey;
const origin = 'test.example/receipts';

const receipts = Array.from({ length: 7 }, (_, index) => receiptAt(index));
const leaves = receipts.map((entry) => leafHash(receiptLeafBytes(entry)));

function proofOf(index: number, signer = privateKey): AdminReceiptProof {
  const note = signNote(formatCheckpoint({ origin, size: leaves.length, rootHash: rootOf(leaves) }), origin, signer);
  return {
    receipt: receipts[index]!,
    leafHash: leaves[index]!.toString('base64'),
    checkpoint: { treeSize: leaves.length, note, verifierKey: verifierKey(origin, rawPublicKey(privateKey)) },
    inclusionPath: inclusionProof(leaves, index).map((hash) => hash.toString('base64')),
  };
}

describe('receiptProofHolds', () => {
  it('holds for every leaf of a signed tree', () => {
    for (let index = 0; index < receipts.length; index += 1) expect(receiptProofHolds(proofOf(index))).toBe(true);
  });

  it('fails for a receipt changed after it was logged, a wrong path, another leaf index, or a note signed by another key', () => {
    const proof = proofOf(3);
    expect(receiptProofHolds({ ...proof, receipt: { ...proof.receipt, outcome: 'denied' } })).toBe(false);
    expect(receiptProofHolds({ ...proof, inclusionPath: [...proof.inclusionPath].reverse() })).toBe(false);
    expect(receiptProofHolds({ ...proof, receipt: { ...proof.receipt, index: 4 } })).toBe(false);
    expect(receiptProofHolds(proofOf(3, other))).toBe(false);
    expect(receiptProofHolds({ ...proof, checkpoint: { ...proof.checkpoint, verifierKey: 'not a key' } })).toBe(false);
  });
});
