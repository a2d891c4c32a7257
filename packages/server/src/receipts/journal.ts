/**
 * The receipt journal: where a call's receipt is made durable before the call is answered. One append-only
 * file per serving process (`receipts-journal-<slot>.jsonl` in the data directory; the slot is `main`, or
 * `worker-<n>` under `serve --workers`), one line per receipt: `{"seq":n,"draft":{…}}`, written with a single
 * write() of the whole line. The receipt log moves journalled receipts into the database right after the
 * answer, many per transaction, and records there how far it got (`receipt_journal_marks`); a process that
 * starts in a slot first moves what an earlier process of that slot left behind. So an answered call's
 * receipt survives a crash of the process (the same durability as a commit under `synchronous = NORMAL`),
 * while the call does not wait for a database transaction (docs/receipts.md#durability-the-receipt-journal-and-the-database).
 */
import { closeSync, fdatasyncSync, ftruncateSync, openSync, readdirSync, readFileSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { GatewayError } from '@gateway/core';
import type { ReceiptDraft } from './store.js';

/** The size from which a journal whose entries are all in the database is emptied (about 4,000 receipts). */
export const CLEAR_AT_BYTES = 4 * 1024 * 1024;

export interface JournalEntry {
  seq: number;
  draft: ReceiptDraft;
}

export interface ReceiptJournal {
  /** The slot: the key of this journal's mark in the database. */
  readonly name: string;
  /**
   * Reads the file from its start (at a start: what an earlier process of this slot left behind; later: every
   * entry since the file last started empty), handing on `batchSize` entries at a time. Returns how many lines
   * were not whole entries (a write cut short by a power loss, or a line not of an entry's shape: such lines
   * are skipped) and the highest entry number read.
   */
  readEntries(batchSize: number, onBatch: (entries: JournalEntry[]) => void): { damagedLines: number; maxSeq: number };
  /**
   * Starts numbering after `afterSeq` (the larger of the database's mark and the leftover entries) with an
   * empty file: call once the leftover entries are in the database.
   */
  start(afterSeq: number): void;
  /** Writes one entry; it is in the file (the operating system's) when this returns. Returns its number. */
  append(draft: ReceiptDraft): number;
  /**
   * Every entry written so far is in the database: the file starts again, empty (numbering goes on), once it
   * holds CLEAR_AT_BYTES (the `clearAtBytes` option) or more. Below that it is left as it is (one system call
   * less after most calls): a replay skips the entries the database's mark covers.
   */
  clear(): void;
  /**
   * Flushes the file to the disk (fdatasync). While the database takes nothing, the journal is the only copy
   * of the receipts waiting in it, and the database's own flushes (WAL checkpoints) do not cover them.
   */
  sync(): void;
  /** Closes the file and releases the slot (once; later calls do nothing); `removeFile` when all of it is in. */
  close(options: { removeFile: boolean }): void;
}

/** The lock files this process holds: its own id in a lock file is not always a stale lock. */
const heldLocks = new Set<string>();

/** Whether a process with this id runs (one we may not signal runs too). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Claims the slot with a lock file holding this process's id. A lock left by a process that has stopped (or
 * by an earlier process that had this same id, as in a container restarted as pid 1) is taken over; one held
 * by a running process, this one included, is refused: two writers must not share one journal.
 */
function claimSlot(lockPath: string, slot: string): void {
  if (heldLocks.has(lockPath)) {
    throw new GatewayError('RECEIPT_JOURNAL_IN_USE', `this process already serves as '${slot}' from this data directory`);
  }
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(lockPath, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      heldLocks.add(lockPath);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let holder = Number.NaN;
    try {
      holder = Number.parseInt(readFileSync(lockPath, 'utf8'), 10);
    } catch {
      // Gone meanwhile, or unreadable: try again to create it.
    }
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isRunning(holder)) {
      throw new GatewayError(
        'RECEIPT_JOURNAL_IN_USE',
        `another gateway process (pid ${holder}) serves from this data directory as '${slot}': give each gateway ` +
          'its own gateway.dataDirectory, or run one `gateway serve --workers N`',
      );
    }
    try {
      unlinkSync(lockPath);
    } catch {
      // Removed by someone else meanwhile.
    }
  }
  throw new GatewayError('RECEIPT_JOURNAL_IN_USE', `could not claim the receipt journal slot '${slot}' (${lockPath})`);
}

/** The draft fields that are a string or null. */
const NULLABLE_TEXT_FIELDS = ['session', 'person', 'clientId', 'source', 'publication', 'fingerprint', 'login', 'reason', 'resultDigest'];

/** Whether a parsed value has every field of a receipt draft, each of its type (what `record` writes). */
function isReceiptDraft(value: unknown): value is ReceiptDraft {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const draft = value as Record<string, unknown>;
  return (
    typeof draft.time === 'string' &&
    typeof draft.tool === 'string' &&
    typeof draft.argumentsDigest === 'string' &&
    (draft.outcome === 'allowed' || draft.outcome === 'denied' || draft.outcome === 'error') &&
    typeof draft.durationMs === 'number' &&
    Number.isFinite(draft.durationMs) &&
    (draft.upstreamStatus === null || Number.isSafeInteger(draft.upstreamStatus)) &&
    NULLABLE_TEXT_FIELDS.every((field) => draft[field] === null || typeof draft[field] === 'string')
  );
}

/** One line of a journal file as an entry, or undefined when it is not one (not JSON, or not of that shape). */
function entryOf(line: string): JournalEntry | undefined {
  try {
    const entry = JSON.parse(line) as JournalEntry;
    if (!Number.isSafeInteger(entry.seq) || entry.seq < 1 || !isReceiptDraft(entry.draft)) return undefined;
    return entry;
  } catch {
    return undefined;
  }
}

/**
 * Reads a journal file from its start in chunks, handing its entries on `batchSize` at a time (memory stays
 * bounded whatever the file's size). A line that is not an entry, or a last line without its newline (a write
 * cut short), is counted as damaged.
 */
function readEntries(fd: number, batchSize: number, onBatch: (entries: JournalEntry[]) => void): { damagedLines: number; maxSeq: number } {
  const buffer = Buffer.allocUnsafe(1 << 16);
  // Decodes across chunk boundaries: a character cut in two by a chunk is completed by the next one.
  const decoder = new StringDecoder('utf8');
  let remainder = '';
  let batch: JournalEntry[] = [];
  let damagedLines = 0;
  let maxSeq = 0;
  for (let position = 0; ; ) {
    const read = readSync(fd, buffer, 0, buffer.length, position);
    if (read === 0) break;
    position += read;
    const lines = (remainder + decoder.write(buffer.subarray(0, read))).split('\n');
    remainder = lines.pop()!;
    for (const line of lines) {
      const entry = entryOf(line);
      if (!entry) {
        damagedLines += 1;
        continue;
      }
      maxSeq = Math.max(maxSeq, entry.seq);
      batch.push(entry);
      if (batch.length >= batchSize) {
        onBatch(batch);
        batch = [];
      }
    }
  }
  if (batch.length > 0) onBatch(batch);
  if (remainder + decoder.end() !== '') damagedLines += 1;
  return { damagedLines, maxSeq };
}

const JOURNAL_FILE = /^receipts-journal-([a-z0-9-]+)\.jsonl$/;

/** The slots that have a journal file in `directory`. */
export function journalSlots(directory: string): string[] {
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const match = JOURNAL_FILE.exec(name);
    return match ? [match[1]!] : [];
  });
}

/** Opens (creating) the journal of `slot` in `directory` and claims the slot. */
export function openReceiptJournal(directory: string, slot: string, options: { clearAtBytes?: number } = {}): ReceiptJournal {
  const clearAtBytes = options.clearAtBytes ?? CLEAR_AT_BYTES;
  const path = join(directory, `receipts-journal-${slot}.jsonl`);
  const lockPath = `${path}.lock`;
  claimSlot(lockPath, slot);
  let fd: number;
  try {
    // O_APPEND: every write lands at the end, also after the file was cut back to empty.
    fd = openSync(path, 'a+', 0o600);
  } catch (error) {
    heldLocks.delete(lockPath);
    unlinkSync(lockPath);
    throw error;
  }
  let lastSeq: number | undefined;
  /** The file's size: what whole lines were written since it last started empty. */
  let size = 0;
  let isClosed = false;
  return {
    name: slot,
    readEntries: (batchSize, onBatch) => readEntries(fd, batchSize, onBatch),
    start(afterSeq) {
      ftruncateSync(fd, 0);
      size = 0;
      lastSeq = afterSeq;
    },
    append(draft) {
      if (lastSeq === undefined) throw new Error('the receipt journal was not started');
      const seq = lastSeq + 1;
      const line = `{"seq":${seq},"draft":${JSON.stringify(draft)}}\n`;
      // One write of the whole line. A short write (a full disk) is an error, and its part of a line is cut off
      // again so that the next line starts on a line of its own.
      const bytes = Buffer.byteLength(line);
      const written = writeSync(fd, line);
      if (written !== bytes) {
        ftruncateSync(fd, size);
        throw new Error(`the receipt journal could write only ${written} of ${bytes} bytes`);
      }
      size += bytes;
      lastSeq = seq;
      return seq;
    },
    clear() {
      if (size < clearAtBytes) return;
      ftruncateSync(fd, 0);
      size = 0;
    },
    sync() {
      fdatasyncSync(fd);
    },
    close({ removeFile }) {
      // Once: a failed start releases every claimed journal, some of which the log may have closed already.
      if (isClosed) return;
      isClosed = true;
      closeSync(fd);
      if (removeFile) unlinkSync(path);
      heldLocks.delete(lockPath);
      try {
        unlinkSync(lockPath);
      } catch {
        // Already gone.
      }
    },
  };
}

export interface ClaimedJournals {
  /** This process's own journal (absent with `receipts.journal: false`). */
  journal?: ReceiptJournal;
  /** Journals nobody writes to any more, for the receipt log to move in and remove. */
  adopt: ReceiptJournal[];
  /** Releases every claimed slot, files kept (the start failed). */
  release(): void;
}

/**
 * The journals a starting process claims in `directory`: its own slot's (or, with `usesJournal` false, that
 * slot's file only when one is left from a start in the other mode, to be moved in and removed) and, when
 * `adoptsOthers` (the process that starts first), the other slots' journals whose lock no running process holds.
 */
export function claimJournals(options: {
  directory: string;
  slot: string;
  usesJournal: boolean;
  adoptsOthers: boolean;
  warn: (message: string) => void;
}): ClaimedJournals {
  const { directory, slot } = options;
  const existing = journalSlots(directory);
  const claimed: ReceiptJournal[] = [];
  const release = () => {
    for (const journal of claimed) journal.close({ removeFile: false });
  };
  try {
    const own = options.usesJournal || existing.includes(slot) ? openReceiptJournal(directory, slot) : undefined;
    if (own) claimed.push(own);
    const adopt = options.usesJournal || !own ? [] : [own];
    if (options.adoptsOthers) {
      for (const other of existing.filter((name) => name !== slot)) {
        try {
          const journal = openReceiptJournal(directory, other);
          claimed.push(journal);
          adopt.push(journal);
        } catch (error) {
          if (!(error instanceof GatewayError) || error.code !== 'RECEIPT_JOURNAL_IN_USE') throw error;
          options.warn(`the receipt journal '${other}' is left alone: ${error.message}`);
        }
      }
    }
    return { ...(options.usesJournal && own ? { journal: own } : {}), adopt, release };
  } catch (error) {
    release();
    throw error;
  }
}
