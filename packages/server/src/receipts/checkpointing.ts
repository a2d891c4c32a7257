/**
 * Checkpoint signing: a signed checkpoint of the receipt tree every N receipts (right after the commit that
 * reaches N) and every T seconds with new receipts, each over a tree checked against the anchor (anchor.ts) in
 * the unit of work that stores it, and a final one at close.
 *
 * Several processes on one log (replicas on PostgreSQL, `serve --workers`): only the holder of the
 * `checkpoint-signer` lease signs (../store/lease-keeper.ts), and its token is checked in the unit of work that
 * stores each checkpoint, so a process that lost the lease stores none. The others ask the holder for one over
 * the change feed (`checkpoint-due`) when N receipts have followed the last, and for an export or a verification.
 */
import { formatCheckpoint, signNote } from '@gateway/core';
import type { ChangeFeed } from '../store/changes.js';
import { leaseKeeper, processHolder, type LeaseKeeper } from '../store/lease-keeper.js';
import type { Lease, Leases } from '../store/leases.js';
import type { Transaction } from '../store/unit-of-work.js';
import { checkAgainstAnchor, type ReceiptAnchor, type VerifiedTree } from './anchor.js';
import type { ReceiptKeys } from './keys.js';
import type { ReceiptStore, StoredCheckpoint } from './store.js';
import type { ReceiptWriter } from './writer.js';

/** The lease whose holder signs the checkpoints of a log that several processes share. */
export const CHECKPOINT_SIGNER_LEASE = 'checkpoint-signer';
/** How long the signer's lease lasts unless renewed (every third of it): the longest a takeover waits. */
export const CHECKPOINT_LEASE_MS = 15_000;
/** How long a process without the lease waits for a live holder's checkpoint over its tree (an export, a proof). */
const HOLDER_WAIT_MS = 5_000;
const HOLDER_POLL_MS = 50;

/** Signing under a lease: the log is shared with other processes. */
export interface CheckpointLease {
  leases: Leases;
  /** This process, as the lease names its holder; default: host, pid, random (processHolder()). */
  holder?: string;
  leaseMs?: number;
  /** Where a process without the lease asks the holder for a checkpoint, and the holder hears it. */
  changes?: ChangeFeed;
}

export interface Checkpointing {
  /**
   * Signs a checkpoint of the current tree when it grew since the last one; resolves with the latest. Without the
   * lease: asks its holder and waits a little for its checkpoint over the current tree (the latest stored then).
   */
  checkpoint(): Promise<StoredCheckpoint | undefined>;
  /** Signs one when `lastIndex` (the last receipt committed) reaches N receipts past the last; never rejects. */
  checkpointWhenDue(lastIndex: number): Promise<void>;
  /**
   * Signs one now when the tree grew, rejecting as `checkpoint` does; without the lease, asks its holder without
   * waiting (and never rejects).
   */
  checkpointSoon(): Promise<void>;
  /** Stops the timer, signs a final checkpoint when this process may sign, and gives the lease up; never rejects. */
  close(): Promise<void>;
  /** Whether this process signs now: always, unless the log is shared and another process holds the lease. */
  isSigner(): boolean;
}

/**
 * A process without the lease: asks the holder for a checkpoint over the tree of `size` and waits until one is
 * stored; resolves with the latest stored then. A holder that died keeps its lease until it expires, and then the
 * next holder (perhaps this process: `signIfHeld`) signs what it left unsigned at once, so the wait is bounded by
 * a takeover (`takeoverMs`), not by HOLDER_WAIT_MS alone: an export or a verification right after a crash still
 * covers the receipts the dead holder left.
 */
async function checkpointOfHolder(
  store: ReceiptStore,
  changes: ChangeFeed | undefined,
  takeoverMs: number,
  signIfHeld: () => Promise<StoredCheckpoint | undefined> | undefined,
): Promise<StoredCheckpoint | undefined> {
  const { size } = await store.head();
  let latest = await store.latestCheckpoint();
  if (size === 0 || (latest?.treeSize ?? 0) >= size || !changes) return latest;
  await changes.publish('checkpoint-due', { treeSize: size });
  for (const deadline = Date.now() + takeoverMs + HOLDER_WAIT_MS; (latest?.treeSize ?? 0) < size && Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, HOLDER_POLL_MS));
    latest = (await signIfHeld()) ?? (await store.latestCheckpoint());
  }
  return latest;
}

export async function startCheckpointing(options: {
  store: ReceiptStore;
  writer: ReceiptWriter;
  keys: ReceiptKeys;
  anchor: ReceiptAnchor;
  everyReceipts: number;
  everySeconds: number;
  /** The log is shared: only the holder of the `checkpoint-signer` lease signs. Without it, this process always does. */
  lease?: CheckpointLease;
  warn: (message: string) => void;
  now: () => Date;
}): Promise<Checkpointing> {
  const { store, writer, keys, anchor, everyReceipts, warn } = options;
  // Before anything is moved in or signed: the database must extend the last signed checkpoint (anchor.ts).
  // Throws RECEIPTS_ANCHOR_MISMATCH, which stops `serve`.
  let verified: VerifiedTree = await checkAgainstAnchor(store, undefined, { size: 0, edge: [] }, anchor.latest(), await store.head());
  // From the anchor, not the database's rows: a forged checkpoint row of a huge size must not stop the signing.
  let checkpointedSize = anchor.latest()?.treeSize ?? 0;
  /** Without the lease: the tree size this process last asked the holder to sign (once per N receipts). */
  let askedSize = 0;
  const holder = options.lease ? (options.lease.holder ?? processHolder()) : '';

  /** Signs and stores a checkpoint of the tree now stored; under a lease, only while `lease` is still held. */
  async function signTree(lease: Lease | undefined): Promise<StoredCheckpoint | undefined> {
    const head = await store.head();
    if (head.size === 0 || head.size <= checkpointedSize) return store.latestCheckpoint();
    const shared = options.lease;
    const isFenced = async (tx: Transaction) =>
      !shared || (lease !== undefined && (await shared.leases.isHeld(tx, CHECKPOINT_SIGNER_LEASE, holder, lease.token)));
    // In the unit of work: the tree checked is the tree signed, and processes of `--workers` take turns (each
    // reads the anchor the last one wrote). Signed only when consistent with the anchor.
    const stored = await writer.addCheckpoint(async (tx, tree) => {
      // The fence: a process whose lease another took since stores nothing (and writes no anchor).
      if (!(await isFenced(tx))) return undefined;
      const latest = anchor.latest();
      if (tree.size === 0 || tree.size <= checkpointedSize) return undefined;
      // Another process of `--workers` signed and stored this very tree already (its hooks wrote the events). An
      // anchor without its row (that unit of work rolled back after the anchor was written: a hook failed) is
      // signed again: the same key signs the same note (Ed25519 is deterministic), now stored with its events.
      if (
        latest &&
        latest.treeSize === tree.size &&
        latest.rootHash.equals(tree.rootHash) &&
        (await store.latestCheckpoint(tx))?.treeSize === tree.size
      ) {
        return undefined;
      }
      verified = await checkAgainstAnchor(store, tx, verified, latest, tree);
      const note = signNote(
        formatCheckpoint({ origin: keys.origin, size: tree.size, rootHash: tree.rootHash }),
        keys.origin,
        keys.signingKey,
      );
      // Outside the database first: once this returns, no start accepts a database that does not extend it.
      anchor.record({ treeSize: tree.size, rootHash: tree.rootHash, note, edge: verified.edge });
      return { treeSize: tree.size, rootHash: tree.rootHash, note, verifierKey: keys.verifierKey, createdAt: options.now().toISOString() };
    });
    checkpointedSize = Math.max(checkpointedSize, stored?.treeSize ?? anchor.latest()?.treeSize ?? 0);
    return stored ?? store.latestCheckpoint();
  }

  const checkpointOrWarn = async (what: string) => {
    try {
      // When the log is shared, only under the lease (held now; its token checked where the checkpoint is stored).
      const lease = keeper?.held();
      if (!keeper || lease) await signTree(lease);
    } catch (error) {
      // The receipts are written; the next checkpoint (N receipts or T seconds on) covers them.
      warn(`${what} failed: ${(error as Error).message}`);
    }
  };
  /** Without the lease: asks the holder to sign the tree of `size` (the change feed delivers it to every process). */
  const askHolder = async (size: number) => {
    askedSize = Math.max(askedSize, size);
    try {
      await options.lease?.changes?.publish('checkpoint-due', { treeSize: size });
    } catch (error) {
      warn(`asking for a receipt checkpoint failed: ${(error as Error).message}`);
    }
  };

  const keeper: LeaseKeeper | undefined = options.lease
    ? leaseKeeper({
        leases: options.lease.leases,
        name: CHECKPOINT_SIGNER_LEASE,
        holder,
        leaseMs: options.lease.leaseMs ?? CHECKPOINT_LEASE_MS,
        // A takeover signs at once what the previous holder left unsigned (it died, or closed without the lease).
        onTaken: () => void checkpointOrWarn('receipt checkpoint'),
        onLost: (reason) => warn(`the ${CHECKPOINT_SIGNER_LEASE} lease is lost (${reason}): another process signs the receipt checkpoints`),
        onStepError: (error) => warn(`the ${CHECKPOINT_SIGNER_LEASE} lease step failed: ${(error as Error)?.message}`),
      })
    : undefined;
  await keeper?.start();
  const unsubscribe = options.lease?.changes?.subscribe('checkpoint-due', ({ treeSize }) => {
    if (keeper?.held() && treeSize > checkpointedSize) void checkpointOrWarn('receipt checkpoint');
  });
  // Every T seconds with new receipts; unref'd so the timer never keeps the process alive.
  const timer = setInterval(() => void checkpointOrWarn('receipt checkpoint'), Math.round(options.everySeconds * 1000));
  timer.unref();

  const isSigner = () => !keeper || keeper.held() !== undefined;
  return {
    async checkpoint() {
      const lease = keeper?.held();
      if (!keeper || lease) return signTree(lease);
      // The longest a takeover takes: the dead holder's lease runs out, then a keeper's next try (every third of it).
      const leaseMs = options.lease?.leaseMs ?? CHECKPOINT_LEASE_MS;
      return checkpointOfHolder(store, options.lease?.changes, leaseMs + Math.ceil(leaseMs / 3), () => {
        const taken = keeper.held();
        return taken ? signTree(taken) : undefined;
      });
    },
    async checkpointWhenDue(lastIndex) {
      if (isSigner()) {
        if (lastIndex + 1 - checkpointedSize >= everyReceipts) await checkpointOrWarn('receipt checkpoint');
      } else if (lastIndex + 1 - Math.max(checkpointedSize, askedSize) >= everyReceipts) {
        await askHolder(lastIndex + 1);
      }
    },
    async checkpointSoon() {
      const lease = keeper?.held();
      if (!keeper || lease) {
        await signTree(lease);
        return;
      }
      const { size } = await store.head().catch(() => ({ size: 0 }));
      if (size > Math.max(checkpointedSize, askedSize)) await askHolder(size);
    },
    async close() {
      clearInterval(timer);
      unsubscribe?.();
      await checkpointOrWarn('final receipt checkpoint');
      // Released, so another process takes over at once rather than after the expiry.
      await keeper?.stop();
    },
    isSigner,
  };
}
