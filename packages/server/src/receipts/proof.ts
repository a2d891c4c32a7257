/**
 * The inclusion proof of one receipt against the latest signed checkpoint (a new one is signed first when the
 * latest does not cover it yet): what `GET /admin/receipts/:id/proof` answers and the console's receipt page
 * shows. RFC 9162 §2.1.3; core `receiptProofHolds` checks it.
 */
import { inclusionProof, type AdminReceiptProof } from '@gateway/core';
import type { ReceiptLog } from './log.js';

/** n of a receipt id `receipt-<n>`; undefined for anything else (the admin API and the console read ids alike). */
export function receiptIndexOf(id: string | undefined): number | undefined {
  const match = id === undefined ? null : /^receipt-(0|[1-9][0-9]{0,15})$/.exec(id);
  return match ? Number(match[1]) : undefined;
}

/** Undefined when there is no receipt `index` or no checkpoint covers it (receipts off the log's signing). */
export async function receiptProof(log: ReceiptLog, index: number): Promise<AdminReceiptProof | undefined> {
  const receipt = await log.store.get(index);
  if (!receipt) return undefined;
  const checkpoint = await log.checkpoint();
  if (!checkpoint || checkpoint.treeSize <= index) return undefined;
  const leaves = await log.store.leafHashes(checkpoint.treeSize);
  return {
    receipt,
    leafHash: leaves[index]!.toString('base64'),
    checkpoint: { treeSize: checkpoint.treeSize, note: checkpoint.note, verifierKey: checkpoint.verifierKey },
    inclusionPath: inclusionProof(leaves, index, checkpoint.treeSize).map((hash) => hash.toString('base64')),
  };
}
