/**
 * Moves journalled receipts (journal.ts) into the database: the ones recorded since the last move, every one of
 * them in one unit of work (group commit), on a later turn of the event loop, after the answers that wait for
 * them; at a start, what an earlier process of the slot left behind. While the database takes nothing, receipts
 * wait in the journal and the move is tried again every second.
 */
import type { KeyObject } from 'node:crypto';
import type { ErrorCode, Receipt } from '@gateway/core';
import type { QuarantineCounts, ReceiptJournal } from './journal.js';
import type { ReceiptDraft, ReceiptStore } from './store.js';
import type { ReceiptWriter } from './writer.js';

/** How long receipts wait in the journal before another try when the database refused them. */
const MOVE_RETRY_MS = 1000;
/** Receipts per unit of work when a start moves what an earlier process left in the journal. */
const REPLAY_BATCH = 1000;
/**
 * Moves start at most once per MOVE_GATHER_MS, or as soon as MOVE_GATHER_RECEIPTS are queued: a receipt recorded
 * when no move started for that long starts one at once (an idle gateway moves each receipt on the next turn, as
 * before), and under load the receipts recorded meanwhile wait to join the next one. Each unit of work costs a
 * transaction (its locks, its WAL frames, the tree head's update) whatever it holds: under load, moving on every
 * turn made units of 4–5 receipts, gathering makes them about 2.5× larger (figures: docs/performance.md, "Receipt
 * moves gathered"). The receipts are durable in the journal meanwhile; their events reach the outbox that much later.
 */
export const MOVE_GATHER_MS = 4;
export const MOVE_GATHER_RECEIPTS = 16;

/**
 * SQLite errors that say the database takes no write now, whatever is written (busy or locked past the busy
 * timeout, a full disk, an I/O error, a read-only file), as opposed to one receipt being refused.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
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

type Entry = { seq: number; draft: ReceiptDraft };
type Settled = (index: number, outcome: { receipt: Receipt } | { error: unknown }) => void;

export interface JournalMoverOptions {
  store: ReceiptStore;
  writer: ReceiptWriter;
  journalKey: KeyObject;
  warn: (message: string) => void;
  alert: (details: { code: ErrorCode } & Record<string, unknown>, message: string) => void;
  /** Signs a checkpoint when `lastIndex` reaches the cadence; never rejects. */
  checkpointWhenDue: (lastIndex: number) => Promise<void>;
}

/**
 * Appends journal entries (of the journal `name`, taken by `take` when the unit of work begins) with their marks:
 * all in one unit of work, or, when that fails
 * because of one of them (a hook refused it), one by one, giving up the one that cannot be written (its mark
 * recorded, so a replay never writes it later, behind the entries after it). `settled` hears of each entry in
 * order, with its receipt or the error it was given up for. Rejects with DatabaseUnavailable, saying how many
 * entries were settled, when the database takes nothing now (one by one would wait out the same lock each time).
 */
async function appendEntries(writer: ReceiptWriter, name: string, take: () => readonly Entry[], settled: Settled): Promise<void> {
  let entries: readonly Entry[] = [];
  try {
    const receipts = await writer.appendTaken(() => {
      entries = take();
      const last = entries.at(-1);
      return { drafts: entries.map((entry) => entry.draft), ...(last ? { mark: { journal: name, seq: last.seq } } : {}) };
    });
    for (const [index, receipt] of receipts.entries()) settled(index, { receipt });
    return;
  } catch (error) {
    if (isDatabaseUnavailable(error)) throw new DatabaseUnavailable(error, 0);
  }
  for (const [index, entry] of entries.entries()) {
    let receipt: Receipt;
    try {
      receipt = (await writer.append([entry.draft], { journal: name, seq: entry.seq }))[0]!;
    } catch (error) {
      if (isDatabaseUnavailable(error)) throw new DatabaseUnavailable(error, index);
      try {
        await writer.giveUp({ journal: name, seq: entry.seq });
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

/**
 * Moves the entries of a journal past the database's mark (the rest are in already, or given up), in their order,
 * with the hooks (their events) like any receipt, reading the file in batches. At a start, that is what an earlier
 * process of the slot left behind; later, the backlog that waited in the journal only. Resolves with the highest
 * entry number the slot has used. A database that takes nothing now stops it (the entries stay in the journal for
 * the next try); a receipt the database refuses alone is given up, with a warning. Lines that do not authenticate
 * under the journal key are not moved but quarantined, and reported.
 */
export async function moveFromJournal(options: JournalMoverOptions, source: ReceiptJournal): Promise<number> {
  const { warn } = options;
  const mark = await options.store.journalMark(source.name);
  const batches = source.entryBatches(options.journalKey, REPLAY_BATCH, (counts) => reportQuarantined(options, source, counts));
  let next = batches.next();
  try {
    for (; !next.done; next = batches.next()) {
      const left = next.value.filter((entry) => entry.seq > mark);
      if (left.length === 0) continue;
      await appendEntries(
        options.writer,
        source.name,
        () => left,
        (_index, outcome) => {
          if ('error' in outcome) warn(`a journalled receipt could not be written and is given up: ${(outcome.error as Error).message}`);
        },
      );
    }
  } catch (error) {
    batches.return({ maxSeq: 0, isLastLineCutShort: false });
    // The database's own error: the entries stay in the journal for the next try.
    throw error instanceof DatabaseUnavailable ? error.cause : error;
  }
  if (next.value.isLastLineCutShort) {
    warn(`the receipt journal '${source.name}' ends in a line cut short (a write interrupted by a crash): skipped`);
  }
  return Math.max(mark, next.value.maxSeq);
}

/** Logs, with its code, that lines of `source` went to its quarantine file. */
export function reportQuarantined(options: Pick<JournalMoverOptions, 'alert'>, source: ReceiptJournal, counts: QuarantineCounts): void {
  const lines = Object.values(counts).reduce((sum, count) => sum + count, 0);
  const reasons = Object.entries(counts).map(([reason, count]) => `${reason}: ${count}`);
  options.alert(
    { code: 'RECEIPT_JOURNAL_LINE_QUARANTINED', journal: source.name, lines, reasons: counts, file: source.quarantinePath },
    `the receipt journal '${source.name}' held ${lines} line(s) this gateway did not write, or copies of ones it had ` +
      `(${reasons.join(', ')}): not moved in, kept in ${source.quarantinePath}`,
  );
}

export interface JournalMover {
  /**
   * Queues the receipt journalled as entry `seq`: resolves with it once it is in the database, or at once with
   * undefined when it waits in the journal only (past `maxPendingInMemory`); rejects when it was given up.
   */
  enqueue(seq: number, draft: ReceiptDraft): Promise<Receipt | undefined>;
  /** Moves what is queued and stops; resolves with whether everything recorded is in the database. */
  close(): Promise<boolean>;
  /** Receipts recorded (durable in the journal) and not yet in the database: the backlog metrics report. */
  waitingCount(): number;
}

type Pending = Entry & { resolve: (receipt: Receipt) => void; reject: (error: unknown) => void };

/**
 * When moves start (MOVE_GATHER_MS, MOVE_GATHER_RECEIPTS): `schedule` starts one now when none started in the last
 * MOVE_GATHER_MS or MOVE_GATHER_RECEIPTS are queued, else once that time is up; nothing while `isBlocked` (a move is
 * scheduled already, or a retry waits for its time).
 */
function gatheredStarts(options: { isBlocked(): boolean; queued(): number; start(): void }): { schedule(): void; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  let lastStartedAt = Number.NEGATIVE_INFINITY;
  const cancel = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  const startNow = () => {
    cancel();
    if (options.isBlocked()) return;
    lastStartedAt = performance.now();
    options.start();
  };
  return {
    schedule() {
      if (options.isBlocked()) return;
      if (options.queued() >= MOVE_GATHER_RECEIPTS) return startNow();
      if (timer) return;
      const waitMs = lastStartedAt + MOVE_GATHER_MS - performance.now();
      if (waitMs <= 0) startNow();
      else timer = setTimeout(startNow, waitMs);
    },
    cancel,
  };
}

/** Settles the promises of the receipts that have an outcome; returns the last written receipt's index (-1: none). */
function settle(batch: readonly Pending[], outcomes: ReadonlyArray<{ receipt: Receipt } | { error: unknown }>): number {
  let lastIndex = -1;
  for (const [index, outcome] of outcomes.entries()) {
    if ('receipt' in outcome) {
      lastIndex = outcome.receipt.index;
      batch[index]!.resolve(outcome.receipt);
    } else {
      batch[index]!.reject(outcome.error);
    }
  }
  return lastIndex;
}

/** The mover of this process's own journal (started). */
export function createJournalMover(options: JournalMoverOptions & { journal: ReceiptJournal; maxPendingInMemory: number }): JournalMover {
  const { journal, warn } = options;
  let pending: Pending[] = [];
  let isMoveScheduled = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let isStopped = false;
  /** Moves run one after another: each picks up what was queued by the time it starts. */
  let moving: Promise<void> = Promise.resolve();
  /**
   * Set while receipts wait in the journal only: past `maxPendingInMemory` receipts queued (the database has
   * refused writes for a while), later ones are not kept in memory too, and the move reads them back from the
   * journal once the queued ones are in. The first receipt of that backlog.
   */
  let backlogFrom: number | undefined;
  /** The last entry journalled. */
  let lastSeq = 0;

  /** Moves in flight or waiting: when none, a move starts now (its unit of work is queued at once). */
  let movesWaiting = 0;
  const move = () => {
    const run = () => moveJournalled().catch((error: unknown) => warn(`receipts could not be moved in: ${(error as Error).message}`));
    moving = movesWaiting === 0 ? run() : moving.then(run);
    movesWaiting += 1;
    void moving.then(() => {
      movesWaiting -= 1;
    });
    return moving;
  };
  /**
   * Its unit of work begins on a later turn of the background lane (store/sqlite/unit-of-work.ts), after the answers
   * of the calls recorded by then, and takes every receipt queued when it begins.
   */
  const moves = gatheredStarts({
    isBlocked: () => isMoveScheduled || retryTimer !== undefined,
    queued: () => pending.length,
    start: () => {
      isMoveScheduled = true;
      void move();
    },
  });
  const scheduleMove = moves.schedule;

  /** Every receipt's outcome goes to its promise, or to a retry. */
  async function moveJournalled(): Promise<void> {
    isMoveScheduled = false;
    // While a retry waits for its time, moves asked for meanwhile leave the receipts to it.
    if (isStopped || retryTimer || (pending.length === 0 && backlogFrom === undefined)) return;
    let lastIndex = -1;
    if (pending.length > 0) {
      const moved = await moveQueued();
      if (moved === undefined) return;
      lastIndex = moved;
    }
    if (backlogFrom !== undefined) {
      // The receipts recorded past the bound waited in the journal only: read back and moved in, in order (again
      // when some were journalled after the read had passed them).
      try {
        while ((await moveFromJournal(options, journal)) < lastSeq);
      } catch (error) {
        waitAndRetry([], error);
        return;
      }
      backlogFrom = undefined;
      clearWhenAllIn();
      lastIndex = (await options.store.head()).size - 1;
    }
    await options.checkpointWhenDue(lastIndex);
  }

  /** Everything written so far is in the database: the journal starts again, empty. */
  function clearWhenAllIn(): void {
    if (pending.length === 0 && backlogFrom === undefined) journal.clear();
  }

  /**
   * Moves the receipts queued in memory (all that are queued when the unit of work begins); resolves with the
   * last one's index, or undefined when the database took nothing now (a retry is scheduled). The journal is
   * emptied (when due) before the receipts' promises settle, so whoever waits for them finds it done.
   */
  async function moveQueued(): Promise<number | undefined> {
    let batch: Pending[] = [];
    const take = () => {
      batch = pending;
      pending = [];
      return batch;
    };
    const outcomes: Array<{ receipt: Receipt } | { error: unknown }> = [];
    try {
      await appendEntries(options.writer, journal.name, take, (index, outcome) => {
        outcomes[index] = outcome;
      });
    } catch (error) {
      // Keep the unsettled ones, in the journal and here, and try again later.
      const unavailable = error as DatabaseUnavailable;
      settle(batch, outcomes);
      waitAndRetry(batch.slice(unavailable.settledCount), unavailable.cause);
      return undefined;
    }
    clearWhenAllIn();
    return settle(batch, outcomes);
  }

  /** Puts receipts back in front of the queue (they are still in the journal) and tries again in a while. */
  function waitAndRetry(items: Pending[], error: unknown): void {
    pending = [...items, ...pending];
    try {
      // Until the database takes them, the journal is their only copy: on the disk, not only in the page cache.
      journal.sync();
    } catch (syncError) {
      warn(`the receipt journal could not be flushed to the disk: ${(syncError as Error).message}`);
    }
    warn(`receipts wait in the journal: the database refused them (${(error as Error).message}); retrying in 1 s`);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void move();
    }, MOVE_RETRY_MS);
    retryTimer.unref();
  }

  return {
    enqueue(seq, draft) {
      lastSeq = seq;
      if (backlogFrom !== undefined || pending.length >= options.maxPendingInMemory) {
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
    async close() {
      clearTimeout(retryTimer);
      retryTimer = undefined;
      moves.cancel();
      await move();
      isStopped = true;
      clearTimeout(retryTimer);
      // What the database did not take stays in the journal (the next start moves it): not failed, so not settled.
      return pending.length === 0 && backlogFrom === undefined;
    },
    waitingCount: () => pending.length + (backlogFrom === undefined ? 0 : lastSeq - backlogFrom + 1),
  };
}
