import { createSecretKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import {
  DEFAULT_CHECKPOINT_EVERY_RECEIPTS,
  DEFAULT_CHECKPOINT_EVERY_SECONDS,
  formatCheckpoint,
  GatewayError,
  keyedDigest,
  parseVerifierKey,
  privateKeyFromPem,
  RECEIPTS_SIGNING_KEY_SECRET,
  rawPublicKey,
  receiptOrigin,
  signNote,
  trustedReceiptKeys,
  verifierKey,
  type ErrorCode,
  type LoadedConfig,
  type Receipt,
} from '@gateway/core';
import type { Vault } from '@gateway/runtime';
import { checkAgainstAnchor, openReceiptAnchor, type ReceiptAnchor, type VerifiedTree } from './anchor.js';
import { journalKeyFrom, type QuarantineCounts, type ReceiptJournal } from './journal.js';
import type { ReceiptDraft, ReceiptHook, ReceiptStore, StoredCheckpoint } from './store.js';
import { runInBackground } from '../scheduling/background-lane.js';

/** Vault entries of the receipt log (created on first start when the vault can store them). */
export const RECEIPTS_DIGEST_KEY_SECRET = 'receipts-digest-key';
export { RECEIPTS_SIGNING_KEY_SECRET };
/** How long receipts wait in the journal before another try when the database refused them. */
const MOVE_RETRY_MS = 1000;
/** Receipts per transaction when a start moves what an earlier process left in the journal. */
const REPLAY_BATCH = 1000;
/** Receipts kept in memory while they wait for the database; later ones wait in the journal only. */
const MAX_PENDING_IN_MEMORY = 10_000;

/** What the pipeline knows about a call; the log adds the digests, the number and the signature cadence. */
export type ReceiptFields = Omit<ReceiptDraft, 'argumentsDigest' | 'resultDigest' | 'arguments'> & {
  argumentsValue: unknown;
  /** `argumentsDigest(argumentsValue)`, when the caller made it ahead (while the upstream worked). */
  argumentsDigest?: string;
  /** The tool result, or undefined when there was none (refusals). */
  resultValue: unknown;
};

export interface ReceiptLog {
  readonly store: ReceiptStore;
  /** The checkpoint origin line, also the signed-note key name. */
  readonly origin: string;
  /** The C2SP verifier key of the current signing key (public). */
  readonly verifierKey: string;
  /** The checkpoint keys verification trusts: this one and `receipts.trustedKeys`, never a key from the database. */
  readonly trustedKeys: readonly string[];
  /** The last signed checkpoint kept outside the database (anchor.ts). */
  readonly anchor: ReceiptAnchor;
  /** A checkpoint is signed at least every this many receipts (`receipts.checkpoint.everyReceipts`). */
  readonly checkpointEveryReceipts: number;
  /** The keyed digest of a call's arguments, as `record` stores it. */
  argumentsDigest(argumentsValue: unknown): string;
  /**
   * Records a call's receipt. When this returns, the receipt is durable: in the journal, from which the next
   * start in this slot moves it into the database after a crash (or, without a journal, committed). The
   * promise resolves with the numbered receipt once it is in the database with what the hooks wrote (the
   * webhook outbox rows): with a journal, on a later turn of the event loop, in one transaction with every
   * receipt recorded by then. It resolves with undefined at once when the receipt waits in the journal only
   * (a backlog while the database refuses writes: it is moved in from there later). It rejects when that
   * receipt could not be written (given up, and logged by the caller). Throws when the receipt could not be
   * made durable at all.
   */
  record(fields: ReceiptFields): Promise<Receipt | undefined>;
  /** Hooks run inside each append's and each new checkpoint's transaction (the webhook outbox registers one). */
  addHook(hook: ReceiptHook): void;
  /** Signs a checkpoint of the current tree when it grew since the last one; returns the latest. */
  checkpoint(): StoredCheckpoint | undefined;
  /** Receipts recorded (durable in the journal) and not yet in the database: the backlog metrics report. */
  waitingCount(): number;
  /** Commits what is queued, stops the timer and signs a final checkpoint. */
  close(): void;
}

export interface ReceiptLogOptions {
  store: ReceiptStore;
  /**
   * Where receipts are made durable before their calls are answered (journal.ts); what an earlier process of
   * its slot left there is moved into the store first. Without it, each receipt is committed before `record`
   * returns (tests, tools that read the log).
   */
  journal?: ReceiptJournal;
  /**
   * Journals nobody writes to any more (other slots after a start with fewer workers, or this slot's own with
   * `receipts.journal: false`), claimed by the process that starts first: their receipts are moved in after
   * the journal's own, and the files removed.
   */
  adopt?: readonly ReceiptJournal[];
  /** Receipts kept in memory while they wait for the database (default 10,000); later ones in the journal only. */
  maxPendingInMemory?: number;
  /** The data directory, where the anchor file is kept; without it, the anchor is kept in the vault only. */
  dataDirectory?: string;
  /**
   * Several processes share the database (`serve --workers`): the signing key must come from the vault, shared,
   * or each process's checkpoints and anchors would be signed by a key the others do not trust.
   */
  requiresSharedSigningKey?: boolean;
  vault: Vault;
  loaded: LoadedConfig;
  hooks?: ReceiptHook[];
  warn?: (message: string) => void;
  /**
   * What an operator must look at, with its registered code (the gateway logs it at error level): journal lines
   * quarantined. Without it, `warn` hears the message.
   */
  alert?: (details: { code: ErrorCode } & Record<string, unknown>, message: string) => void;
  now?: () => Date;
}

/**
 * SQLite errors that say the database takes no write now, whatever is written (busy or locked past the busy
 * timeout, a full disk, an I/O error, a read-only file), as opposed to one receipt being refused.
 */
function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|PROTOCOL|NOMEM)/.test(code);
}

/** The database took nothing now: `cause` is its error; the first `settledCount` entries were settled before. */
class DatabaseUnavailable extends Error {
  constructor(
    override readonly cause: unknown,
    readonly settledCount: number,
  ) {
    super((cause as Error).message);
  }
}

/**
 * A secret from the vault, created there on first start, saying whether the vault keeps it. A read-only vault
 * (env, exec) without the entry gets a key that lives as long as this process, with a warning: digests then
 * differ across restarts, and checkpoints after a restart are signed by a new key that verify does not trust.
 */
async function storedVaultSecret(
  vault: Vault,
  name: string,
  create: () => string,
  warn: (message: string) => void,
): Promise<{ value: string; isStored: boolean }> {
  const existing = await vault.get(name);
  if (existing) return { value: existing, isStored: true };
  const value = create();
  try {
    await vault.set(name, value);
  } catch {
    warn(`the ${vault.provider} vault has no '${name}' and cannot store one: using a key that lasts until this process stops`);
    return { value, isStored: false };
  }
  return { value, isStored: true };
}

export async function createReceiptLog(options: ReceiptLogOptions): Promise<ReceiptLog> {
  const { store, vault, loaded } = options;
  const warn = options.warn ?? (() => undefined);
  const now = options.now ?? (() => new Date());
  const settings = loaded.config.receipts ?? {};
  const storesArguments = settings.storeArguments === true;
  const everyReceipts = settings.checkpoint?.everyReceipts ?? DEFAULT_CHECKPOINT_EVERY_RECEIPTS;
  const everySeconds = settings.checkpoint?.everySeconds ?? DEFAULT_CHECKPOINT_EVERY_SECONDS;
  const origin = receiptOrigin(loaded);

  const digestSecret = await storedVaultSecret(vault, RECEIPTS_DIGEST_KEY_SECRET, () => randomBytes(32).toString('base64url'), warn);
  const isDigestKeyKept = digestSecret.isStored;
  const digestKeyBytes = Buffer.from(digestSecret.value, 'base64url');
  if (digestKeyBytes.length < 16) {
    throw new GatewayError(
      'RECEIPTS_KEY_INVALID',
      `the vault entry '${RECEIPTS_DIGEST_KEY_SECRET}' must hold at least 16 bytes (base64url)`,
    );
  }
  const digestKey = createSecretKey(digestKeyBytes);
  const journalKey = journalKeyFrom(digestKeyBytes);
  const signing = await storedVaultSecret(
    vault,
    RECEIPTS_SIGNING_KEY_SECRET,
    () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    warn,
  );
  if (!signing.isStored && options.requiresSharedSigningKey) {
    throw new GatewayError(
      'RECEIPTS_SIGNING_KEY_NOT_SHARED',
      `--workers needs the receipt signing key in the vault, but the ${vault.provider} vault has no ` +
        `'${RECEIPTS_SIGNING_KEY_SECRET}' and cannot store one: use the file vault, or provide it ` +
        '(GATEWAY_SECRET_RECEIPTS_SIGNING_KEY with the env vault; docs/receipts.md#configuration)',
    );
  }
  const signingPem = signing.value;
  let signingKey: KeyObject;
  try {
    signingKey = privateKeyFromPem(signingPem);
    if (signingKey.asymmetricKeyType !== 'ed25519') throw new Error('not Ed25519');
  } catch {
    throw new GatewayError(
      'RECEIPTS_KEY_INVALID',
      `the vault entry '${RECEIPTS_SIGNING_KEY_SECRET}' is not an Ed25519 private key (PKCS#8 PEM)`,
    );
  }
  const publicVerifierKey = verifierKey(origin, rawPublicKey(signingKey));
  for (const key of settings.trustedKeys ?? []) {
    if (!parseVerifierKey(key)) throw new GatewayError('RECEIPTS_KEY_INVALID', `receipts.trustedKeys: ${key} is not a valid verifier key`);
  }
  const trustedKeys = [publicVerifierKey, ...trustedReceiptKeys(loaded, undefined).filter((key) => key !== publicVerifierKey)];
  const hooks = [...(options.hooks ?? [])];
  // Journal lines are authenticated with a key derived from the digest key. One that dies with this process would
  // leave the next start unable to tell this process's lines from forged ones: without it, no journal (each call
  // waits for its receipt's commit), and what the slot's journal holds is screened, moved and removed as an orphan.
  const journal = isDigestKeyKept ? options.journal : undefined;
  const adopt = [...(options.journal && !journal ? [options.journal] : []), ...(options.adopt ?? [])];
  if (options.journal && !journal) {
    warn(
      `the receipt journal is off: its lines are authenticated with a key derived from '${RECEIPTS_DIGEST_KEY_SECRET}', ` +
        'which this vault cannot keep; each call waits for its receipt to commit (docs/receipts.md#authenticated-journal-lines)',
    );
  }
  const alert = options.alert ?? ((_details, message) => warn(message));
  const latestStored = store.latestCheckpoint();
  const anchor = await openReceiptAnchor({
    ...(options.dataDirectory === undefined ? {} : { directory: options.dataDirectory }),
    vault,
    trustedKeys,
    // A key that lasts as long as this process cannot have signed an earlier anchor: nothing to hold it to.
    refusesUntrusted: signing.isStored,
    ...(latestStored ? { databaseNote: latestStored.note } : {}),
    warn,
  });
  // Before anything is moved in or signed: the database must extend the last signed checkpoint (anchor.ts).
  // Throws RECEIPTS_ANCHOR_MISMATCH, which stops `serve`.
  let verified: VerifiedTree = checkAgainstAnchor(store, { size: 0, edge: [] }, anchor.latest(), store.head());
  // From the anchor, not the database's rows: a forged checkpoint row of a huge size must not stop the signing.
  let checkpointedSize = anchor.latest()?.treeSize ?? 0;

  function checkpoint(): StoredCheckpoint | undefined {
    const head = store.head();
    if (head.size === 0 || head.size <= checkpointedSize) return store.latestCheckpoint();
    // In the write transaction: the tree checked is the tree signed, and processes of `--workers` take turns
    // (each reads the anchor the last one wrote). Signed only when consistent with the anchor.
    const stored = store.addCheckpointWith((tree) => {
      const latest = anchor.latest();
      if (tree.size === 0 || tree.size <= checkpointedSize) return undefined;
      // Another process of `--workers` signed and stored this very tree already (its hooks wrote the events). An
      // anchor without its row (that transaction rolled back after the anchor was written: a hook failed) is
      // signed again: the same key signs the same note (Ed25519 is deterministic), now stored with its events.
      if (
        latest &&
        latest.treeSize === tree.size &&
        latest.rootHash.equals(tree.rootHash) &&
        store.latestCheckpoint()?.treeSize === tree.size
      ) {
        return undefined;
      }
      verified = checkAgainstAnchor(store, verified, latest, tree);
      const note = signNote(formatCheckpoint({ origin, size: tree.size, rootHash: tree.rootHash }), origin, signingKey);
      // Outside the database first: once this returns, no start accepts a database that does not extend it.
      anchor.record({ treeSize: tree.size, rootHash: tree.rootHash, note, edge: verified.edge });
      return { treeSize: tree.size, rootHash: tree.rootHash, note, verifierKey: publicVerifierKey, createdAt: now().toISOString() };
      // Each hook's `onCheckpoint` (webhooks) writes in the checkpoint row's transaction.
    }, hooks);
    checkpointedSize = Math.max(checkpointedSize, stored?.treeSize ?? anchor.latest()?.treeSize ?? 0);
    return stored ?? store.latestCheckpoint();
  }

  // Every T seconds with new receipts; unref'd so the timer never keeps the process alive.
  const timer = setInterval(
    () => {
      try {
        checkpoint();
      } catch (error) {
        warn(`receipt checkpoint failed: ${(error as Error).message}`);
      }
    },
    Math.round(everySeconds * 1000),
  );
  timer.unref();

  // Receipts move from the journal into the database after the answers that wait for them: every receipt
  // recorded by then, in one transaction (group commit), on a later turn of the event loop. moveJournalled runs
  // on its own (an immediate, a retry timer): it never throws, every outcome goes to a promise.
  type Pending = { seq: number; draft: ReceiptDraft; resolve: (receipt: Receipt) => void; reject: (error: unknown) => void };
  let pending: Pending[] = [];
  let isMoveScheduled = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let isClosed = false;
  /**
   * Set while receipts wait in the journal only: past `maxPendingInMemory` receipts queued (the database has
   * refused writes for a while), later ones are not kept in memory too, and the move reads them back from the
   * journal once the queued ones are in. The first receipt of that backlog.
   */
  let backlogFrom: number | undefined;
  /** The journal entry number of the latest receipt recorded (the backlog's end). */
  let lastSeq = 0;
  const maxPendingInMemory = options.maxPendingInMemory ?? MAX_PENDING_IN_MEMORY;
  const scheduleMove = () => {
    if (isMoveScheduled || retryTimer) return;
    isMoveScheduled = true;
    runInBackground(() => {
      isMoveScheduled = false;
      moveJournalled();
    });
  };

  function moveJournalled(): void {
    if (!journal || isClosed || (pending.length === 0 && backlogFrom === undefined)) return;
    if (pending.length > 0 && !moveQueued(journal)) return;
    if (backlogFrom !== undefined) {
      // The receipts recorded past the bound waited in the journal only: read back and moved in, in order.
      try {
        moveFromJournal(journal);
      } catch (error) {
        waitAndRetry([], error);
        return;
      }
      backlogFrom = undefined;
      checkpointWhenDue(store.head().size - 1);
    }
    // Everything written so far is in the database: the journal starts again, empty.
    journal.clear();
  }

  /**
   * Appends journal entries (of the journal `name`) with their marks: all in one transaction, or, when that
   * fails because of one of them (a hook refused it), one by one, giving up the one that cannot be written (its
   * mark recorded, so a replay never writes it later, behind the entries after it). `settled` hears of each
   * entry in order, with its receipt or the error it was given up for. Throws DatabaseUnavailable, saying how
   * many entries were settled, when the database takes nothing now (one by one would wait out the same lock
   * each time).
   */
  function appendEntries(
    name: string,
    entries: ReadonlyArray<{ seq: number; draft: ReceiptDraft }>,
    settled: (index: number, outcome: { receipt: Receipt } | { error: unknown }) => void,
  ): void {
    try {
      const receipts = store.appendBatch(
        entries.map((entry) => entry.draft),
        hooks,
        { journal: name, seq: entries.at(-1)!.seq },
      );
      for (const [index, receipt] of receipts.entries()) settled(index, { receipt });
      return;
    } catch (error) {
      if (isDatabaseUnavailable(error)) throw new DatabaseUnavailable(error, 0);
    }
    for (const [index, entry] of entries.entries()) {
      let receipt: Receipt;
      try {
        receipt = store.appendBatch([entry.draft], hooks, { journal: name, seq: entry.seq })[0]!;
      } catch (error) {
        if (isDatabaseUnavailable(error)) throw new DatabaseUnavailable(error, index);
        try {
          store.setJournalMark({ journal: name, seq: entry.seq });
        } catch {
          // Not even the mark can be written: the database takes nothing now.
          throw new DatabaseUnavailable(error, index);
        }
        settled(index, { error });
        continue;
      }
      settled(index, { receipt });
    }
  }

  /** Moves the receipts queued in memory; false when the database took nothing now (a retry is scheduled). */
  function moveQueued(journal: ReceiptJournal): boolean {
    const batch = pending;
    pending = [];
    let lastIndex = -1;
    try {
      appendEntries(journal.name, batch, (index, outcome) => {
        if ('receipt' in outcome) {
          lastIndex = outcome.receipt.index;
          batch[index]!.resolve(outcome.receipt);
        } else {
          batch[index]!.reject(outcome.error);
        }
      });
    } catch (error) {
      // Keep the unsettled ones, in the journal and here, and try again later.
      const unavailable = error as DatabaseUnavailable;
      waitAndRetry(batch.slice(unavailable.settledCount), unavailable.cause);
      return false;
    }
    checkpointWhenDue(lastIndex);
    return true;
  }

  /** Puts receipts back in front of the queue (they are still in the journal) and tries again in a while. */
  function waitAndRetry(items: Pending[], error: unknown): void {
    pending = [...items, ...pending];
    try {
      // Until the database takes them, the journal is their only copy: on the disk, not only in the page cache.
      journal?.sync();
    } catch (syncError) {
      warn(`the receipt journal could not be flushed to the disk: ${(syncError as Error).message}`);
    }
    warn(`receipts wait in the journal: the database refused them (${(error as Error).message}); retrying in 1 s`);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      moveJournalled();
    }, MOVE_RETRY_MS);
    retryTimer.unref();
  }

  /** Every N receipts: signed right after the commit that reaches N. */
  function checkpointWhenDue(lastIndex: number): void {
    if (lastIndex + 1 - checkpointedSize < everyReceipts) return;
    try {
      checkpoint();
    } catch (error) {
      // The receipts are written; the next checkpoint (N receipts or T seconds on) covers them.
      warn(`receipt checkpoint failed: ${(error as Error).message}`);
    }
  }

  /** Logs, with its code, that lines of `source` went to its quarantine file. */
  function reportQuarantined(source: ReceiptJournal, counts: QuarantineCounts): void {
    const lines = Object.values(counts).reduce((sum, count) => sum + count, 0);
    const reasons = Object.entries(counts).map(([reason, count]) => `${reason}: ${count}`);
    alert(
      { code: 'RECEIPT_JOURNAL_LINE_QUARANTINED', journal: source.name, lines, reasons: counts, file: source.quarantinePath },
      `the receipt journal '${source.name}' held ${lines} line(s) this gateway did not write, or copies of ones it had ` +
        `(${reasons.join(', ')}): not moved in, kept in ${source.quarantinePath}`,
    );
  }

  /**
   * Moves the entries of a journal past the database's mark (the rest are in already, or given up), in their
   * order, with the hooks (their events) like any receipt, reading the file in batches. At a start, that is
   * what an earlier process of the slot left behind; later, the backlog that waited in the journal only.
   * Returns the highest entry number the slot has used. A database that takes nothing now stops it (the
   * entries stay in the journal for the next try); a receipt the database refuses alone is given up, with a
   * warning. Lines that do not authenticate under the journal key are not moved but quarantined, and reported.
   */
  function moveFromJournal(source: ReceiptJournal): number {
    const mark = store.journalMark(source.name);
    const read = source.readEntries(
      journalKey,
      REPLAY_BATCH,
      (entries) => {
        const left = entries.filter((entry) => entry.seq > mark);
        if (left.length === 0) return;
        try {
          appendEntries(source.name, left, (_index, outcome) => {
            if ('error' in outcome) {
              warn(`a journalled receipt could not be written and is given up: ${(outcome.error as Error).message}`);
            }
          });
        } catch (error) {
          // The database's own error: the entries stay in the journal for the next try.
          throw error instanceof DatabaseUnavailable ? error.cause : error;
        }
      },
      (counts) => reportQuarantined(source, counts),
    );
    if (read.isLastLineCutShort) {
      warn(`the receipt journal '${source.name}' ends in a line cut short (a write interrupted by a crash): skipped`);
    }
    return Math.max(mark, read.maxSeq);
  }

  const sizeBefore = store.head().size;
  if (journal) journal.start(moveFromJournal(journal), journalKey, (counts) => reportQuarantined(journal, counts));
  for (const orphan of adopt) {
    moveFromJournal(orphan);
    orphan.close({ removeFile: true });
  }
  if (store.head().size > sizeBefore) checkpoint();

  return {
    store,
    origin,
    verifierKey: publicVerifierKey,
    trustedKeys,
    anchor,
    checkpointEveryReceipts: everyReceipts,
    argumentsDigest: (argumentsValue) => keyedDigest(digestKey, argumentsValue ?? {}),
    record(fields) {
      // The receipt's own fields only: the arguments and the result are not written anywhere (the journal
      // included) except as keyed digests, unless `receipts.storeArguments` asks for the arguments.
      const draft: ReceiptDraft = {
        time: fields.time,
        session: fields.session,
        person: fields.person,
        clientId: fields.clientId,
        tool: fields.tool,
        source: fields.source,
        publication: fields.publication,
        fingerprint: fields.fingerprint,
        login: fields.login,
        outcome: fields.outcome,
        reason: fields.reason,
        upstreamStatus: fields.upstreamStatus,
        durationMs: fields.durationMs,
        argumentsDigest: fields.argumentsDigest ?? keyedDigest(digestKey, fields.argumentsValue ?? {}),
        resultDigest: fields.resultValue === undefined ? null : keyedDigest(digestKey, fields.resultValue),
      };
      if (storesArguments) draft.arguments = fields.argumentsValue ?? {};
      if (isClosed) throw new Error('the receipt log is closed');
      if (!journal) {
        // No journal: the commit itself, before returning.
        const receipt = store.append(draft, hooks);
        checkpointWhenDue(receipt.index);
        return Promise.resolve(receipt);
      }
      // Durable once the journal has the line; the database gets it on a later turn, with the others by then.
      const seq = journal.append(draft);
      lastSeq = seq;
      if (backlogFrom !== undefined || pending.length >= maxPendingInMemory) {
        if (backlogFrom === undefined) {
          backlogFrom = seq;
          warn(`${pending.length} receipts wait for the database: the next ones wait in the journal only, until it takes them`);
        }
        scheduleMove();
        return Promise.resolve(undefined);
      }
      const committed = new Promise<Receipt>((resolve, reject) => {
        pending.push({ seq, draft, resolve, reject });
      });
      scheduleMove();
      return committed;
    },
    addHook(hook) {
      hooks.push(hook);
    },
    waitingCount: () => pending.length + (backlogFrom === undefined ? 0 : lastSeq - backlogFrom + 1),
    checkpoint,
    close() {
      if (isClosed) return;
      clearTimeout(retryTimer);
      retryTimer = undefined;
      moveJournalled();
      clearTimeout(retryTimer);
      isClosed = true;
      // Removed only when all of it is in the database; otherwise the next start in this slot moves the rest.
      // What the database did not take stays in the journal (the next start moves it): not failed, so not settled.
      journal?.close({ removeFile: pending.length === 0 && backlogFrom === undefined });
      clearInterval(timer);
      try {
        checkpoint();
      } catch (error) {
        warn(`final receipt checkpoint failed: ${(error as Error).message}`);
      }
    },
  };
}
