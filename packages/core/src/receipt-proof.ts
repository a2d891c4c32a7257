/**
 * Checking an inclusion proof of one receipt (`GET /admin/receipts/:id/proof`, `gateway receipts prove`, the
 * console's receipt page): the leaf is hashed from the receipt itself and the root read from the signed
 * checkpoint note, so nothing the proof states about either is taken on trust.
 */
import type { AdminReceiptProof } from './admin-api.js';
import { parseCheckpoint, parseVerifierKey, verifyNote } from './checkpoint.js';
import { leafHash, verifyInclusion } from './merkle.js';
import { receiptLeafBytes } from './receipt.js';

/**
 * Whether the checkpoint's signature verifies under the verifier key it names and the receipt is leaf `index` of
 * the tree it signs. Which keys to trust is the caller's question (the console's is its own signing key).
 */
export function receiptProofHolds(proof: AdminReceiptProof): boolean {
  const key = parseVerifierKey(proof.checkpoint.verifierKey);
  const text = key ? verifyNote(proof.checkpoint.note, key.name, key.publicKey) : undefined;
  const checkpoint = text === undefined ? undefined : parseCheckpoint(text);
  if (checkpoint === undefined) return false;
  return verifyInclusion(
    leafHash(receiptLeafBytes(proof.receipt)),
    proof.receipt.index,
    checkpoint.size,
    proof.inclusionPath.map((hash) => Buffer.from(hash, 'base64')),
    checkpoint.rootHash,
  );
}
