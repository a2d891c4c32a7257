/**
 * The receipt log verifier (docs/receipts.md › Verifying): recomputes the Merkle tree from the receipts,
 * checks every checkpoint's signature (with trusted keys only) and root, consistency between consecutive
 * checkpoints, that no more receipts than a bound wait for a checkpoint, and the log against checkpoints
 * collected elsewhere (a webhook receiver's copies); names the first receipt that breaks. Pure: the CLI runs it
 * on an export, the server on its database.
 */
import { privateKeyFromPem, rawPublicKey, verifierKey, verifyCheckpointNote, type Checkpoint } from './checkpoint.js';
import { DEFAULT_CHECKPOINT_EVERY_RECEIPTS } from './config/receipts-schema.js';
import type { LoadedConfig } from './config/load.js';
import { GatewayError } from './errors.js';
import { appendToEdge, consistencyProof, leafHash, rootOfEdge, verifyConsistency } from './merkle.js';
import { receiptLeafBytes, type Receipt } from './receipt.js';

/** The vault entry holding the checkpoint signing key (Ed25519, PKCS#8 PEM). */
export const RECEIPTS_SIGNING_KEY_SECRET = 'receipts-signing-key';

export interface LogEntryReceipt {
  receipt: Receipt;
  /** The leaf hash recorded when the receipt was appended (helps name an edited receipt; not trusted). */
  recordedLeafHash?: Buffer;
}

export interface LogEntryCheckpoint {
  note: string;
  /** The key the log names beside the note: shown in messages, never trusted for that. */
  verifierKey?: string;
}

/** A checkpoint collected outside the log (a `io.service.receipts.checkpoint` event a receiver stored). */
export interface CollectedCheckpoint {
  /** How to name it: the event id. */
  id: string;
  note: string;
  /** What the event's data claims besides the note; each must agree with the signed note. */
  origin?: string;
  treeSize?: number;
  rootHash?: string;
}

export interface LogVerification {
  ok: boolean;
  /** Receipts read. */
  treeSize: number;
  checkpointsVerified: number;
  /** Receipts after the largest verified checkpoint (no signature covers them yet). */
  uncoveredReceipts: number;
  /** Collected checkpoints (`verify --checkpoints`) the log is consistent with. */
  collectedVerified?: number;
  /** The first receipt that breaks the log (`receipt-<n>`), when one can be named. */
  firstBrokenReceipt?: string;
  problems: string[];
}

/** The checkpoint origin: `receipts.origin`, else `<host of gateway.url>/receipts`. */
export function receiptOrigin(loaded: LoadedConfig): string {
  return loaded.config.receipts?.origin ?? `${new URL(loaded.config.gateway.url).host}/receipts`;
}

/**
 * The checkpoint keys a verifier trusts: the key of the vault's signing key (when given) and
 * `receipts.trustedKeys` (earlier signing keys, another gateway's). Never a key read from the log itself.
 */
export function trustedReceiptKeys(loaded: LoadedConfig, signingKeyPem: string | undefined): string[] {
  const keys = new Set<string>(loaded.config.receipts?.trustedKeys ?? []);
  if (signingKeyPem !== undefined) {
    let raw: Buffer;
    try {
      raw = rawPublicKey(privateKeyFromPem(signingKeyPem));
    } catch {
      throw new GatewayError(
        'RECEIPTS_KEY_INVALID',
        `the vault entry '${RECEIPTS_SIGNING_KEY_SECRET}' is not an Ed25519 private key (PKCS#8 PEM)`,
      );
    }
    keys.add(verifierKey(receiptOrigin(loaded), raw));
  }
  return [...keys];
}

export function verifyReceiptLog(input: {
  receipts: readonly LogEntryReceipt[];
  checkpoints: readonly LogEntryCheckpoint[];
  /** Verifier keys to accept: from the configuration, the vault or the command line, never from the log. */
  trustedKeys: readonly string[];
  /**
   * At most this many receipts may follow the largest verified checkpoint (default 1,000, the default signing
   * cadence): more, or receipts with no verified checkpoint at all, mean checkpoints are missing.
   */
  uncoveredBound?: number;
  collected?: readonly CollectedCheckpoint[];
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
  const firstSuspectIn = (from: number, to: number) =>
    [...suspects].filter((index) => index >= from && index < to).sort((a, b) => a - b)[0];

  const checkpoints: Checkpoint[] = [];
  const seen = new Set<string>();
  for (const entry of input.checkpoints) {
    if (seen.has(entry.note)) continue;
    seen.add(entry.note);
    const verified = verifyCheckpointNote(entry.note, input.trustedKeys);
    if (!verified) {
      const size = /^[^\n]*\n(\d+)\n/.exec(entry.note)?.[1] ?? '?';
      const named = entry.verifierKey ? ` (it names ${entry.verifierKey})` : '';
      problems.push(`the checkpoint of size ${size} is signed by no trusted key${named}`);
      continue;
    }
    checkpoints.push(verified.checkpoint);
  }
  checkpoints.sort((a, b) => a.size - b.size);

  // One pass over the leaves keeps the right edge; the root is compared at each checkpoint's size.
  let edge: Buffer[] = [];
  let size = 0;
  let verified = 0;
  let isBroken = false;
  let previous: Checkpoint | undefined;
  for (const checkpoint of checkpoints) {
    if (checkpoint.size > leaves.length) {
      breakAt(leaves.length, `checkpoint of size ${checkpoint.size} covers receipt-${leaves.length}, which is missing from the log`);
      isBroken = true;
      break;
    }
    while (size < checkpoint.size) {
      edge = appendToEdge(edge, size, leaves[size]!);
      size += 1;
    }
    if (!rootOfEdge(edge).equals(checkpoint.rootHash)) {
      const from = previous?.size ?? 0;
      const named = firstSuspectIn(from, checkpoint.size);
      breakAt(
        named ?? from,
        named !== undefined
          ? `receipt-${named} breaks the signed checkpoint of size ${checkpoint.size}`
          : `the signed checkpoint of size ${checkpoint.size} does not match ` +
              `receipts receipt-${from}..receipt-${checkpoint.size - 1}: one of them was changed`,
      );
      isBroken = true;
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
        previous.rootHash,
        checkpoint.rootHash,
      )
    ) {
      problems.push(`checkpoints of sizes ${previous.size} and ${checkpoint.size} are not consistent`);
      isBroken = true;
      break;
    }
    verified += 1;
    previous = checkpoint;
  }

  // Receipts no signature covers: the gateway signs at least every `bound` receipts (and before each export
  // and verification), so more than that, or none covered at all, means checkpoints were removed.
  const covered = previous?.size ?? 0;
  const uncovered = leaves.length - covered;
  const bound = input.uncoveredBound ?? DEFAULT_CHECKPOINT_EVERY_RECEIPTS;
  if (!isBroken && uncovered > 0 && (uncovered > bound || covered === 0)) {
    breakAt(
      covered,
      `${uncovered} receipts without a checkpoint (receipt-${covered}..receipt-${leaves.length - 1}): ` +
        (covered === 0 ? 'no checkpoint signed by a trusted key covers any receipt' : `at most ${bound} may wait for the next one`),
    );
  }

  const collected = input.collected ? verifyCollected(input.collected, leaves, input.trustedKeys, firstSuspectIn) : undefined;
  for (const failure of collected?.failures ?? []) breakAt(failure.index, failure.problem);

  return {
    ok: problems.length === 0,
    treeSize: leaves.length,
    checkpointsVerified: verified,
    uncoveredReceipts: uncovered,
    ...(collected ? { collectedVerified: collected.verified } : {}),
    ...(firstBroken === undefined ? {} : { firstBrokenReceipt: `receipt-${firstBroken}` }),
    problems,
  };
}

/**
 * The log against checkpoints collected elsewhere: each must be signed by a trusted key, say in its data what
 * its note says, and the log's tree at its size must have its root. The log's later leaves are appended to
 * that same tree, so it is then a prefix of the log's tree (RFC 9162 §2.1.4); a different root is a fork: the
 * log was rewritten after the checkpoint left the gateway.
 */
function verifyCollected(
  collected: readonly CollectedCheckpoint[],
  leaves: readonly Buffer[],
  trustedKeys: readonly string[],
  firstSuspectIn: (from: number, to: number) => number | undefined,
): { verified: number; failures: Array<{ index: number; problem: string }> } {
  const failures: Array<{ index: number; problem: string }> = [];
  const signed: Array<{ id: string; checkpoint: Checkpoint }> = [];
  for (const entry of collected) {
    const verified = verifyCheckpointNote(entry.note, trustedKeys);
    const name = `checkpoint event ${entry.id}${verified ? ` (tree size ${verified.checkpoint.size})` : ''}`;
    if (!verified) {
      failures.push({ index: 0, problem: `${name}: its note is signed by no trusted key` });
      continue;
    }
    const { checkpoint } = verified;
    if (
      (entry.origin !== undefined && entry.origin !== checkpoint.origin) ||
      (entry.treeSize !== undefined && entry.treeSize !== checkpoint.size) ||
      (entry.rootHash !== undefined && entry.rootHash !== checkpoint.rootHash.toString('base64'))
    ) {
      failures.push({ index: 0, problem: `${name}: its data does not say what its signed note says` });
      continue;
    }
    signed.push({ id: entry.id, checkpoint });
  }
  signed.sort((a, b) => a.checkpoint.size - b.checkpoint.size);
  let edge: Buffer[] = [];
  let size = 0;
  let matchedSize = 0;
  let verified = 0;
  for (const { id, checkpoint } of signed) {
    const name = `checkpoint event ${id} (tree size ${checkpoint.size})`;
    if (checkpoint.size > leaves.length) {
      failures.push({
        index: leaves.length,
        problem: `${name}: the log has only ${leaves.length} receipts: receipts it covers were removed`,
      });
      continue;
    }
    while (size < checkpoint.size) {
      edge = appendToEdge(edge, size, leaves[size]!);
      size += 1;
    }
    if (!rootOfEdge(edge).equals(checkpoint.rootHash)) {
      const named = firstSuspectIn(matchedSize, checkpoint.size) ?? matchedSize;
      failures.push({
        index: named,
        problem:
          `${name}: the log is not consistent with it (its tree at size ${checkpoint.size} has another root): ` +
          `the log was rewritten in receipt-${matchedSize}..receipt-${checkpoint.size - 1} after this checkpoint was signed`,
      });
      continue;
    }
    matchedSize = checkpoint.size;
    verified += 1;
  }
  return { verified, failures };
}
