/**
 * The receipt log: composes its keys (keys.ts), the anchor (anchor.ts), checkpoint signing (checkpointing.ts),
 * the journal and its mover (journal.ts, journal-mover.ts) over the receipt store and its unit of work (store.ts).
 */
import {
  DEFAULT_CHECKPOINT_EVERY_RECEIPTS,
  DEFAULT_CHECKPOINT_EVERY_SECONDS,
  keyedDigest,
  type ErrorCode,
  type LoadedConfig,
  type Receipt,
} from '@gateway/core';
import type { Vault } from '@gateway/runtime';
import { openReceiptAnchor, type ReceiptAnchor } from './anchor.js';
import { startCheckpointing, type CheckpointLease } from './checkpointing.js';
import type { ReceiptJournal } from './journal.js';
import { createJournalMover, moveFromJournal, reportQuarantined, type JournalMover, type JournalMoverOptions } from './journal-mover.js';
import { loadReceiptKeys, RECEIPTS_DIGEST_KEY_SECRET, RECEIPTS_SIGNING_KEY_SECRET, type ReceiptKeys } from './keys.js';
import type { ReceiptDraft, ReceiptHook, ReceiptStorage, ReceiptStore, StoredCheckpoint } from './store.js';
import { createReceiptWriter, RECEIPT_COMMIT_RETRY_DELAYS_MS } from './writer.js';

export { RECEIPTS_DIGEST_KEY_SECRET, RECEIPTS_SIGNING_KEY_SECRET };
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
  /**
   * Whether a receipt is durable when `record` returns (it is in the journal). Without a journal it is durable once
   * the promise `record` returns resolves (committed), and a call's answer waits for that.
   */
  readonly isDurableOnReturn: boolean;
  /** The keyed digest of a call's arguments, as `record` stores it. */
  argumentsDigest(argumentsValue: unknown): string;
  /**
   * Records a call's receipt. When this returns, the receipt is durable: in the journal, from which the next
   * start in this slot moves it into the database after a crash (without a journal: once the promise resolves,
   * committed; `isDurableOnReturn`). The
   * promise resolves with the numbered receipt once it is in the database with what the hooks wrote (the
   * webhook outbox rows): with a journal, on a later turn of the event loop, in one transaction with every
   * receipt recorded by then. It resolves with undefined at once when the receipt waits in the journal only
   * (a backlog while the database refuses writes: it is moved in from there later). It rejects when that
   * receipt could not be written (given up, and logged by the caller). Throws when the receipt could not be
   * made durable at all.
   */
  record(fields: ReceiptFields): Promise<Receipt | undefined>;
  /** Hooks run in each append's and each new checkpoint's unit of work (the webhook outbox registers one). */
  addHook(hook: ReceiptHook): void;
  /**
   * Signs a checkpoint of the current tree when it grew since the last one; resolves with the latest. When the log
   * is shared and another process holds the signer's lease: asks it, and waits a little for its checkpoint.
   */
  checkpoint(): Promise<StoredCheckpoint | undefined>;
  /** Whether this process signs the checkpoints now (always, unless another process holds the signer's lease). */
  isCheckpointSigner(): boolean;
  /**
   * Commits what is queued, stops the timer and signs a final checkpoint when this process signs (its anchor
   * copied to the vault), then gives the signer's lease up.
   */
  close(): Promise<void>;
  /** Receipts recorded (durable in the journal) and not yet in the database: the backlog metrics report. */
  waitingCount(): number;
}

export interface ReceiptLogOptions extends ReceiptStorage {
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
  /**
   * Several processes share the log (replicas on PostgreSQL, `serve --workers`): only the holder of the
   * `checkpoint-signer` lease signs checkpoints (checkpointing.ts). Without it, this process signs them all.
   */
  signingLease?: CheckpointLease;
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
 * The receipt's own fields only: the arguments and the result are written nowhere (the journal included) except
 * as keyed digests, unless `receipts.storeArguments` asks for the arguments.
 */
function draftOf(fields: ReceiptFields, keys: ReceiptKeys, storesArguments: boolean): ReceiptDraft {
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
    argumentsDigest: fields.argumentsDigest ?? keyedDigest(keys.digestKey, fields.argumentsValue ?? {}),
    resultDigest: fields.resultValue === undefined ? null : keyedDigest(keys.digestKey, fields.resultValue),
  };
  if (fields.approval !== undefined) draft.approval = fields.approval;
  if (fields.action !== undefined) draft.action = fields.action;
  // An action receipt has no arguments of its own to store.
  else if (storesArguments) draft.arguments = fields.argumentsValue ?? {};
  return draft;
}

/**
 * The journals a start takes care of: journal lines are authenticated with a key derived from the digest key. One
 * that dies with this process would leave the next start unable to tell this process's lines from forged ones:
 * without it, no journal (each call waits for its receipt's commit), and what the slot's journal holds is
 * screened, moved and removed as an orphan.
 */
function journalsOf(options: ReceiptLogOptions, keys: ReceiptKeys, warn: (message: string) => void) {
  const journal = keys.isDigestKeyKept ? options.journal : undefined;
  const adopt = [...(options.journal && !journal ? [options.journal] : []), ...(options.adopt ?? [])];
  if (options.journal && !journal) {
    warn(
      `the receipt journal is off: its lines are authenticated with a key derived from '${RECEIPTS_DIGEST_KEY_SECRET}', ` +
        'which this vault cannot keep; each call waits for its receipt to commit (docs/receipts.md#authenticated-journal-lines)',
    );
  }
  return { journal, adopt };
}

/**
 * Moves in what an earlier process of this slot left in its journal and what the adopted journals hold (removing
 * them), then starts the journal; resolves with the mover of what is recorded from now on.
 */
async function startJournals(
  options: JournalMoverOptions,
  journals: { journal: ReceiptJournal | undefined; adopt: readonly ReceiptJournal[] },
  maxPendingInMemory: number,
): Promise<JournalMover | undefined> {
  const { journal } = journals;
  if (journal) {
    journal.start(await moveFromJournal(options, journal), options.journalKey, (counts) => reportQuarantined(options, journal, counts));
  }
  for (const orphan of journals.adopt) {
    await moveFromJournal(options, orphan);
    orphan.close({ removeFile: true });
  }
  return journal ? createJournalMover({ ...options, journal, maxPendingInMemory }) : undefined;
}

export async function createReceiptLog(options: ReceiptLogOptions): Promise<ReceiptLog> {
  const { store, vault, loaded } = options;
  const warn = options.warn ?? (() => undefined);
  const alert = options.alert ?? ((_details, message) => warn(message));
  const settings = loaded.config.receipts ?? {};
  const everyReceipts = settings.checkpoint?.everyReceipts ?? DEFAULT_CHECKPOINT_EVERY_RECEIPTS;
  const keys = await loadReceiptKeys({ vault, loaded, requiresSharedSigningKey: options.requiresSharedSigningKey === true, warn });
  const hooks = [...(options.hooks ?? [])];
  const journals = journalsOf(options, keys, warn);
  const latestStored = await store.latestCheckpoint();
  const anchor = await openReceiptAnchor({
    ...(options.dataDirectory === undefined ? {} : { directory: options.dataDirectory }),
    vault,
    trustedKeys: keys.trustedKeys,
    // A key that lasts as long as this process cannot have signed an earlier anchor: nothing to hold it to.
    refusesUntrusted: keys.isSigningKeyKept,
    ...(latestStored ? { databaseNote: latestStored.note } : {}),
    warn,
  });
  const writer = createReceiptWriter(options, hooks);
  const checkpointing = await startCheckpointing({
    store,
    writer,
    keys,
    anchor,
    everyReceipts,
    everySeconds: settings.checkpoint?.everySeconds ?? DEFAULT_CHECKPOINT_EVERY_SECONDS,
    ...(options.signingLease ? { lease: options.signingLease } : {}),
    warn,
    now: options.now ?? (() => new Date()),
  });
  const moverOptions: JournalMoverOptions = {
    store,
    writer,
    journalKey: keys.journalKey,
    warn,
    alert,
    checkpointWhenDue: checkpointing.checkpointWhenDue,
  };
  const sizeBefore = (await store.head()).size;
  const mover = await startJournals(moverOptions, journals, options.maxPendingInMemory ?? MAX_PENDING_IN_MEMORY);
  if ((await store.head()).size > sizeBefore) await checkpointing.checkpointSoon();

  let closing: Promise<void> | undefined;
  return {
    store,
    origin: keys.origin,
    verifierKey: keys.verifierKey,
    trustedKeys: keys.trustedKeys,
    anchor,
    checkpointEveryReceipts: everyReceipts,
    isDurableOnReturn: mover !== undefined,
    argumentsDigest: (argumentsValue) => keyedDigest(keys.digestKey, argumentsValue ?? {}),
    record(fields) {
      const draft = draftOf(fields, keys, settings.storeArguments === true);
      if (closing) throw new Error('the receipt log is closed');
      // Durable once the journal has the line; the database gets it on a later turn, with the others by then.
      if (mover) return mover.enqueue(journals.journal!.append(draft), draft);
      // No journal: the commit itself, before the promise resolves. The call has run: a commit refused for a reason
      // that passes (a serialisation failure, a connection cut before COMMIT) is tried again rather than lost.
      const onRetry = (error: unknown, retry: number, delayMs: number) =>
        warn(
          `receipt of '${draft.tool}' not committed (${(error as Error).message}): trying again in ${delayMs} ms ` +
            `(retry ${retry} of ${RECEIPT_COMMIT_RETRY_DELAYS_MS.length})`,
        );
      return writer.appendRetrying([draft], onRetry).then(async ([receipt]) => {
        await checkpointing.checkpointWhenDue(receipt!.index);
        return receipt;
      });
    },
    addHook(hook) {
      hooks.push(hook);
    },
    checkpoint: checkpointing.checkpoint,
    isCheckpointSigner: checkpointing.isSigner,
    waitingCount: () => mover?.waitingCount() ?? 0,
    close() {
      closing ??= (async () => {
        const isAllIn = mover ? await mover.close() : true;
        // Removed only when all of it is in the database; otherwise the next start in this slot moves the rest.
        journals.journal?.close({ removeFile: isAllIn });
        await checkpointing.close();
        // The vault's copy of the final checkpoint too (the data directory's file is written already).
        await anchor.settled();
      })();
      return closing;
    },
  };
}
