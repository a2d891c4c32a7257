/**
 * The receipt log verifier (docs/receipts.md › Verifying): recomputes the Merkle tree from the receipts,
 * checks every checkpoint's signature and root, and consistency between consecutive checkpoints, and names
 * the first receipt that breaks. Pure: the CLI runs it on an export, the server on its database.
 */
import { parseCheckpoint, parseVerifierKey, verifyNote } from './checkpoint.js';
import { appendToEdge, consistencyProof, leafHash, rootOfEdge, verifyConsistency } from './merkle.js';
import { receiptLeafBytes, type Receipt } from './receipt.js';

export interface LogEntryReceipt {
  receipt: Receipt;
  /** The leaf hash recorded when the receipt was appended (helps name an edited receipt; not trusted). */
  recordedLeafHash?: Buffer;
}

export interface LogEntryCheckpoint {
  note: string;
  verifierKey: string;
}

export interface LogVerification {
  ok: boolean;
  /** Receipts read. */
  treeSize: number;
  checkpointsVerified: number;
  /** The first receipt that breaks the log (`receipt-<n>`), when one can be named. */
  firstBrokenReceipt?: string;
  problems: string[];
}

export function verifyReceiptLog(input: {
  receipts: readonly LogEntryReceipt[];
  checkpoints: readonly LogEntryCheckpoint[];
  /** Verifier keys to accept; default: any key the checkpoints name (then only the log's own consistency is proven). */
  trustedKeys?: readonly string[];
}): LogVerification {
  const problems: string[] = [];
  let firstBroken: number | undefined;
  const breakAt = (index: number, problem: string) => {
    problems.push(problem);
    if (firstBroken === undefined || index < firstBroken) firstBroken = index;
  };

  // Leaves in order: receipt-n must be leaf n; a gap is a deleted receipt.
  const leaves: Buffer[] = [];
  const suspects = new Set<number>();
  for (const [position, entry] of input.receipts.entries()) {
    const receipt = entry.receipt;
    if (receipt.index !== position || receipt.id !== `receipt-${receipt.index}`) {
      breakAt(position, `receipt-${position} is missing (found ${receipt.id ?? 'a receipt without id'} at its place)`);
      break;
    }
    const hash = leafHash(receiptLeafBytes(receipt));
    if (entry.recordedLeafHash && !entry.recordedLeafHash.equals(hash)) {
      suspects.add(position);
      breakAt(position, `receipt-${position} does not hash to the leaf hash recorded when it was written: it was changed`);
    }
    leaves.push(hash);
  }

  const trusted = input.trustedKeys ? new Set(input.trustedKeys) : undefined;
  const checkpoints: Array<{ size: number; root: Buffer }> = [];
  for (const entry of input.checkpoints) {
    const key = parseVerifierKey(entry.verifierKey);
    if (!key) {
      problems.push(`a checkpoint names a malformed verifier key: ${entry.verifierKey}`);
      continue;
    }
    if (trusted && !trusted.has(entry.verifierKey)) {
      problems.push(`a checkpoint is signed by an untrusted key: ${entry.verifierKey}`);
      continue;
    }
    const text = verifyNote(entry.note, key.name, key.publicKey);
    const checkpoint = text === undefined ? undefined : parseCheckpoint(text);
    if (!checkpoint) {
      problems.push(`a checkpoint signature does not verify with ${entry.verifierKey}`);
      continue;
    }
    if (checkpoint.origin !== key.name) {
      problems.push(`checkpoint of size ${checkpoint.size} has origin ${checkpoint.origin}, signed as ${key.name}`);
      continue;
    }
    checkpoints.push({ size: checkpoint.size, root: checkpoint.rootHash });
  }
  checkpoints.sort((a, b) => a.size - b.size);

  // One pass over the leaves keeps the right edge; the root is compared at each checkpoint's size.
  let edge: Buffer[] = [];
  let size = 0;
  let verified = 0;
  let previous: { size: number; root: Buffer } | undefined;
  for (const checkpoint of checkpoints) {
    if (checkpoint.size > leaves.length) {
      breakAt(leaves.length, `checkpoint of size ${checkpoint.size} covers receipt-${leaves.length}, which is missing from the log`);
      break;
    }
    while (size < checkpoint.size) {
      edge = appendToEdge(edge, size, leaves[size]!);
      size += 1;
    }
    if (!rootOfEdge(edge).equals(checkpoint.root)) {
      const from = previous?.size ?? 0;
      const named = [...suspects].filter((index) => index >= from && index < checkpoint.size).sort((a, b) => a - b)[0];
      breakAt(
        named ?? from,
        named !== undefined
          ? `receipt-${named} breaks the signed checkpoint of size ${checkpoint.size}`
          : `the signed checkpoint of size ${checkpoint.size} does not match ` +
              `receipts receipt-${from}..receipt-${checkpoint.size - 1}: one of them was changed`,
      );
      break;
    }
    // RFC 9162 §2.1.4: the earlier signed tree is a prefix of this one.
    if (
      previous &&
      previous.size > 0 &&
      !verifyConsistency(
        previous.size,
        checkpoint.size,
        consistencyProof(leaves, previous.size, checkpoint.size),
        previous.root,
        checkpoint.root,
      )
    ) {
      problems.push(`checkpoints of sizes ${previous.size} and ${checkpoint.size} are not consistent`);
      break;
    }
    verified += 1;
    previous = checkpoint;
  }

  return {
    ok: problems.length === 0,
    treeSize: leaves.length,
    checkpointsVerified: verified,
    ...(firstBroken === undefined ? {} : { firstBrokenReceipt: `receipt-${firstBroken}` }),
    problems,
  };
}
