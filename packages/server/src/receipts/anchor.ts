/**
 * The anchor: the receipt log's last signed checkpoint kept outside its database, so that whoever can write
 * `gateway.db` but holds no key cannot make the gateway sign a rewritten history. It is written, with each
 * checkpoint, to `receipts-anchor.json` in the data directory (fsynced) and, where the vault is writable, to the
 * vault entry `receipts-anchor`; the largest copy that a trusted key signed (the database's own latest
 * checkpoint counts too) is the one a start checks the database against, and every checkpoint is signed only
 * over a tree that is consistent with it (RFC 9162 §2.1.4). docs/receipts.md#the-anchor.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  appendLeavesToEdge,
  consistencyProofFromEdge,
  GatewayError,
  rootOfEdge,
  verifyCheckpointNote,
  verifyConsistency,
} from '@gateway/core';
import { vaultIsWritable, type Vault } from '@gateway/runtime';
import type { Transaction } from '../store/unit-of-work.js';
import type { ReceiptStore, TreeHead } from './store.js';

export const RECEIPTS_ANCHOR_FILE = 'receipts-anchor.json';
export const RECEIPTS_ANCHOR_SECRET = 'receipts-anchor';
/** Leaf hashes read per query while a start folds the stored leaves. */
const FOLD_PAGE = 16_384;

export interface Anchor {
  treeSize: number;
  rootHash: Buffer;
  /** The C2SP signed note (verified with a trusted key before it is used). */
  note: string;
  /** The right edge of the tree at `treeSize` when known (checked against the signed root): narrows a mismatch. */
  edge?: Buffer[];
  /** Where it was read: the data directory's file, the vault, or the database's latest checkpoint. */
  source: string;
}

/** A tree of the stored leaves that this process has checked against the anchor. */
export interface VerifiedTree {
  size: number;
  edge: Buffer[];
}

export interface ReceiptAnchor {
  /** The largest trusted anchor: this process's own, or a newer one another process (`--workers`) wrote. */
  latest(): Anchor | undefined;
  /** Keeps a checkpoint just signed: the file (written whole, fsynced) now; the vault copy shortly after. */
  record(anchor: Omit<Anchor, 'source'>): void;
  /** Waits for the vault copies queued so far. */
  settled(): Promise<void>;
}

interface AnchorDocument {
  treeSize: number;
  rootHash: string;
  note: string;
  edge?: string[];
}

function documentOf(anchor: Omit<Anchor, 'source'>): string {
  const document: AnchorDocument = {
    treeSize: anchor.treeSize,
    rootHash: anchor.rootHash.toString('base64'),
    note: anchor.note,
    ...(anchor.edge ? { edge: anchor.edge.map((hash) => hash.toString('base64')) } : {}),
  };
  return `${JSON.stringify(document)}\n`;
}

/**
 * An anchor from its stored text, when a trusted key signed its note: size and root come from the signed
 * checkpoint, never from the unsigned fields; the edge is kept only when it hashes to the signed root. A copy
 * that is not JSON or that no trusted key signed is `refuse`d (an anchor is written whole, by a trusted key:
 * such a copy was put there by someone else, or the signing key changed without `receipts.trustedKeys`).
 */
function anchorOf(
  text: string | undefined,
  source: string,
  trustedKeys: readonly string[],
  refuse: (problem: string) => void,
): Anchor | undefined {
  if (text === undefined) return undefined;
  let document: Partial<AnchorDocument>;
  try {
    document = JSON.parse(text) as Partial<AnchorDocument>;
  } catch {
    refuse(`the receipt anchor in ${source} is not JSON`);
    return undefined;
  }
  const verified = typeof document?.note === 'string' ? verifyCheckpointNote(document.note, trustedKeys) : undefined;
  if (!verified) {
    refuse(
      `the receipt anchor in ${source} is not signed by a trusted key (a new signing key? list the earlier one in receipts.trustedKeys)`,
    );
    return undefined;
  }
  const { checkpoint } = verified;
  const edge = Array.isArray(document.edge) ? document.edge.map((hash) => Buffer.from(String(hash), 'base64')) : undefined;
  const isEdgeOfRoot = edge?.every((hash) => hash.length === 32) === true && rootOfEdge(edge!).equals(checkpoint.rootHash);
  return { treeSize: checkpoint.size, rootHash: checkpoint.rootHash, note: document.note!, ...(isEdgeOfRoot ? { edge } : {}), source };
}

function larger(a: Anchor | undefined, b: Anchor | undefined): Anchor | undefined {
  if (!a) return b;
  if (!b) return a;
  return b.treeSize > a.treeSize ? b : a;
}

/** Writes a file whole (a temporary file, fsynced, renamed over it, the directory fsynced): old or new, never half. */
function writeFileDurably(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  const descriptor = openSync(temporary, 'w', 0o600);
  try {
    writeSync(descriptor, text);
    fsyncSync(descriptor);
  } finally {
    closeSync(descriptor);
  }
  renameSync(temporary, path);
  try {
    const directory = openSync(dirname(path), 'r');
    try {
      fsyncSync(directory);
    } finally {
      closeSync(directory);
    }
  } catch {
    // Some file systems refuse to open or sync a directory: the rename is then as durable as they make it.
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

export async function openReceiptAnchor(options: {
  /** The data directory; without it (tests, tools) the anchor lives in the vault and in memory only. */
  directory?: string;
  vault: Vault;
  trustedKeys: readonly string[];
  /**
   * A copy no trusted key signed stops the start (RECEIPTS_ANCHOR_MISMATCH) instead of being skipped with a
   * warning: when the signing key is kept in the vault, such a copy is someone else's.
   */
  refusesUntrusted: boolean;
  /** The database's latest checkpoint note: an anchor too when a trusted key signed it (an upgrade, a lost file). */
  databaseNote?: string;
  warn: (message: string) => void;
}): Promise<ReceiptAnchor> {
  const { vault, trustedKeys, warn } = options;
  const path = options.directory === undefined ? undefined : join(options.directory, RECEIPTS_ANCHOR_FILE);
  // Once running, a copy that cannot be trusted (another process's key that lasts as long as it does, under
  // `--workers` with a read-only vault) is skipped with one warning per text; the start refuses it.
  let isStarting = true;
  const warned = new Set<string>();
  const refuse = (problem: string) => {
    if (isStarting && options.refusesUntrusted) {
      throw new GatewayError('RECEIPTS_ANCHOR_MISMATCH', `${problem}: the receipt log is not checked against it, so nothing is signed`);
    }
    if (!warned.has(problem)) warn(`${problem}: ignored`);
    warned.add(problem);
  };
  const fromFile = () => (path ? anchorOf(readText(path), path, trustedKeys, refuse) : undefined);
  const readVault = async (onProblem = refuse) =>
    anchorOf(await vault.get(RECEIPTS_ANCHOR_SECRET), `the vault entry '${RECEIPTS_ANCHOR_SECRET}'`, trustedKeys, onProblem);
  const database = options.databaseNote === undefined ? undefined : verifyCheckpointNote(options.databaseNote, trustedKeys);
  let best = larger(
    larger(fromFile(), await readVault()),
    database
      ? { treeSize: database.checkpoint.size, rootHash: database.checkpoint.rootHash, note: options.databaseNote!, source: 'the database' }
      : undefined,
  );
  isStarting = false;

  // The vault copy: one write at a time, the newest anchor only, never replacing a larger one.
  const isVaultWritable = vaultIsWritable(vault);
  let queued: Omit<Anchor, 'source'> | undefined;
  let writing: Promise<void> = Promise.resolve();
  let hasWarned = false;
  const copyToVault = async () => {
    const anchor = queued;
    queued = undefined;
    if (!anchor) return;
    try {
      // A copy that cannot be read or trusted is replaced.
      const stored = await readVault(() => undefined);
      if (!stored || stored.treeSize < anchor.treeSize) await vault.set(RECEIPTS_ANCHOR_SECRET, documentOf(anchor));
    } catch (error) {
      if (!hasWarned) warn(`the receipt anchor could not be copied to the vault: ${(error as Error).message}`);
      hasWarned = true;
    }
  };

  return {
    latest() {
      best = larger(best, fromFile());
      return best;
    },
    record(anchor) {
      if (path) writeFileDurably(path, documentOf(anchor));
      best = { ...anchor, source: path ?? 'memory' };
      if (!isVaultWritable) return;
      queued = anchor;
      writing = writing.then(copyToVault);
    },
    settled: () => writing,
  };
}

function mismatch(anchor: Anchor, detail: string, firstDifferent?: { from: number; to: number }): GatewayError {
  return new GatewayError(
    'RECEIPTS_ANCHOR_MISMATCH',
    `the receipt log in the database is not consistent with its signed checkpoint of size ${anchor.treeSize} ` +
      `(kept in ${anchor.source}): ${detail}; nothing is signed over it. Restore the database from a backup, or ` +
      'see docs/receipts.md#the-anchor',
    {
      details: {
        treeSize: anchor.treeSize,
        ...(firstDifferent
          ? { firstDifferentReceipt: `receipt-${firstDifferent.from}`, lastDifferentReceipt: `receipt-${firstDifferent.to}` }
          : {}),
      },
    },
  );
}

/**
 * Folds the stored leaf hashes [tree.size, to) into `tree`, keeping them when `keepLeaves`; undefined when some
 * are missing (deleted rows).
 */
async function foldStoredLeaves(
  store: ReceiptStore,
  tx: Transaction | undefined,
  tree: VerifiedTree,
  to: number,
  keepLeaves = false,
): Promise<{ tree: VerifiedTree; leaves: Buffer[] } | undefined> {
  let { size, edge } = tree;
  const leaves: Buffer[] = [];
  while (size < to) {
    const end = Math.min(to, size + FOLD_PAGE);
    const page = await store.leafHashesBetween(size, end, tx);
    if (page.length !== end - size) return undefined;
    edge = appendLeavesToEdge(edge, size, page);
    size = end;
    if (keepLeaves) leaves.push(...page);
  }
  return { tree: { size, edge }, leaves };
}

/** The first perfect subtree of the anchor's tree whose stored leaves hash to another root. */
function firstDifferentRange(anchor: Anchor, edge: readonly Buffer[]): { from: number; to: number } | undefined {
  if (!anchor.edge || anchor.edge.length !== edge.length) return undefined;
  let from = 0;
  for (let bit = 2 ** Math.floor(Math.log2(anchor.treeSize)), position = 0; bit >= 1; bit /= 2) {
    if (Math.floor(anchor.treeSize / bit) % 2 === 0) continue;
    if (!anchor.edge[position]!.equals(edge[position]!)) return { from, to: from + bit - 1 };
    from += bit;
    position += 1;
  }
  return undefined;
}

/**
 * Checks that the tree about to be signed (`head`, as the store keeps it) is consistent with the anchor, from
 * what this process has already checked (`verified`): the stored leaves up to the anchor's size must hash to
 * its signed root, the leaves after it to the head's root, and an RFC 9162 consistency proof from the anchor's
 * size to the head's must verify. Reads the leaves after `verified` only (at a start, every leaf once). Returns
 * the new checked tree; throws RECEIPTS_ANCHOR_MISMATCH. `tx`: the unit of work the checkpoint is signed in.
 */
export async function checkAgainstAnchor(
  store: ReceiptStore,
  tx: Transaction | undefined,
  verified: VerifiedTree,
  anchor: Anchor | undefined,
  head: TreeHead,
): Promise<VerifiedTree> {
  let tree = verified;
  if (anchor && anchor.treeSize > tree.size) {
    const folded = await foldStoredLeaves(store, tx, tree, anchor.treeSize);
    if (!folded) throw mismatch(anchor, `receipts it covers are missing from the database (it holds ${head.size})`);
    if (!rootOfEdge(folded.tree.edge).equals(anchor.rootHash)) {
      const range = firstDifferentRange(anchor, folded.tree.edge);
      throw mismatch(
        anchor,
        `the database's first ${anchor.treeSize} receipts hash to another root` +
          (range ? ` (the difference lies in receipt-${range.from}..receipt-${range.to})` : ''),
        range,
      );
    }
    tree = folded.tree;
  }
  if (head.size < tree.size) {
    throw anchor && anchor.treeSize > head.size
      ? mismatch(anchor, `the database's tree head counts ${head.size} receipts`)
      : new GatewayError(
          'RECEIPTS_ANCHOR_MISMATCH',
          `the stored tree head counts ${head.size} receipts, fewer than the ${tree.size} checked`,
          {
            details: { treeSize: tree.size },
          },
        );
  }
  const anchored = tree;
  // The proof below is made from the anchor's edge and the leaves after it, when the anchor is where this check
  // starts (a start, or another process's newer checkpoint); past it, the earlier check stands for it.
  const isAtAnchor = anchor !== undefined && anchor.treeSize === anchored.size && anchored.size > 0;
  const later = await foldStoredLeaves(store, tx, anchored, head.size, isAtAnchor);
  if (!later || !rootOfEdge(later.tree.edge).equals(head.rootHash)) {
    const detail = `the stored tree head of size ${head.size} does not match the stored receipts`;
    throw anchor ? mismatch(anchor, detail) : new GatewayError('RECEIPTS_ANCHOR_MISMATCH', detail, { details: { treeSize: head.size } });
  }
  // RFC 9162 §2.1.4: the tree signed last is a prefix of the one about to be signed.
  if (isAtAnchor && head.size > anchored.size) {
    const proof = consistencyProofFromEdge(anchored.edge, anchored.size, later.leaves);
    if (!verifyConsistency(anchored.size, head.size, proof, anchor.rootHash, head.rootHash)) {
      throw mismatch(anchor, `no consistency proof from size ${anchor.treeSize} to the tree of size ${head.size} verifies`);
    }
  }
  return later.tree;
}
