/**
 * The receipt journal: where a call's receipt is made durable before the call is answered. One append-only
 * file per serving process (`receipts-journal-<slot>.jsonl` in the data directory; the slot is `main`, or
 * `worker-<n>` under `serve --workers`), one line per receipt: `{"seq":n,"draft":{…}}`, written with a single
 * write() of the whole line. The receipt log moves journalled receipts into the database right after the
 * answer, many per transaction, and records there how far it got (`receipt_journal_marks`); a process that
 * starts in a slot first moves what an earlier process of that slot left behind. So an answered call's
 * receipt survives a crash of the process (the same durability as a commit under `synchronous = NORMAL`),
 * while the call does not wait for a database transaction (docs/receipts.md#durability-the-receipt-journal-and-the-database).
 *
 * Each line carries a MAC (HMAC-SHA256 under a key derived from the vault's receipt digest key, over the slot and
 * the line), so only lines this gateway wrote are moved in: a line that does not authenticate, or repeats an
 * entry number, goes to a quarantine file beside the journal instead (docs/receipts.md#authenticated-journal-lines).
 */
import { createHmac, createSecretKey, hkdfSync, timingSafeEqual, type KeyObject } from 'node:crypto';
import {
  closeSync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { GatewayError } from '@gateway/core';
import type { ReceiptDraft } from './store.js';

/** The size from which a journal whose entries are all in the database is emptied (about 4,000 receipts). */
export const CLEAR_AT_BYTES = 4 * 1024 * 1024;
/** Lines per batch when a journal is screened before it is emptied (none of them is handed on). */
const SCREEN_BATCH = 1000;

export interface JournalEntry {
  seq: number;
  draft: ReceiptDraft;
}

/**
 * Why a whole line was not moved in but quarantined: no MAC (not written by this gateway, or by a version before
 * MACs), a MAC that does not match (changed, forged, or written under another key or for another slot), an entry
 * number not above the one before it (a copy of a genuine line appended again), or an authentic line that is
 * not an entry (never written by a correct gateway).
 */
export type QuarantineReason = 'missing-mac' | 'wrong-mac' | 'replayed' | 'malformed';

/** How many lines a read put in the quarantine file, by reason. */
export type QuarantineCounts = Partial<Record<QuarantineReason, number>>;

export interface JournalRead {
  /** The highest entry number among the lines handed on (authentic, in order). */
  maxSeq: number;
  /** Whether the file ended in a line without its newline: a write cut short (a crash mid-write), skipped. */
  isLastLineCutShort: boolean;
}

export interface ReceiptJournal {
  /** The slot: the key of this journal's mark in the database. */
  readonly name: string;
  /** The quarantine file beside the journal, where lines that are not moved in are kept. */
  readonly quarantinePath: string;
  /**
   * Reads the file from its start (at a start: what an earlier process of this slot left behind; later: every
   * entry since the file last started empty), handing on `batchSize` authentic entries at a time, in file order.
   * A whole line that does not authenticate under `key`, repeats an entry number, or is not an entry is appended
   * to the quarantine file instead (once per line, however often the file is read), and `onQuarantined` hears
   * how many when there were any (also when `onBatch` threw and stopped the read). A last line cut short is
   * skipped.
   */
  readEntries(
    key: KeyObject,
    batchSize: number,
    onBatch: (entries: JournalEntry[]) => void,
    onQuarantined: (counts: QuarantineCounts) => void,
  ): JournalRead;
  /**
   * The same read, batch by batch, for a reader that waits between batches (the receipt log appends each batch
   * in a unit of work): the quarantined lines are reported when the read ends, also when the reader stops early
   * (`return()`).
   */
  entryBatches(
    key: KeyObject,
    batchSize: number,
    onQuarantined: (counts: QuarantineCounts) => void,
  ): Generator<JournalEntry[], JournalRead>;
  /**
   * Starts numbering after `afterSeq` (the larger of the database's mark and the leftover entries) with an
   * empty file, authenticating every line it writes with `key`: call once the leftover entries are in the
   * database. Lines another writer appended meanwhile are screened before `clear` or `close` discards them
   * (quarantined, and `onQuarantined` hears of them), so none is dropped unseen.
   */
  start(afterSeq: number, key: KeyObject, onQuarantined: (counts: QuarantineCounts) => void): void;
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

/**
 * The key that authenticates journal lines, derived from the receipt digest key (HKDF-SHA256 with a label of its
 * own): held in the vault like the key it comes from, never in the journal or the database, and never equal to
 * the key of the argument digests, whose values are in every receipt.
 */
export function journalKeyFrom(digestKey: Uint8Array): KeyObject {
  return createSecretKey(Buffer.from(hkdfSync('sha256', digestKey, new Uint8Array(0), 'gateway receipt journal line mac v1', 32)));
}

/** A line is `{"seq":n,"draft":{…}` + MAC_OPEN + 43 base64url characters + MAC_CLOSE. */
const MAC_OPEN = Buffer.from(',"mac":"');
const MAC_CLOSE = Buffer.from('"}');
const MAC_TEXT_LENGTH = 43;
const MAC_TAIL_LENGTH = MAC_OPEN.length + MAC_TEXT_LENGTH + MAC_CLOSE.length;

/**
 * The MAC of a line's body, bound to its slot: a genuine line copied into another slot's journal (whose entry
 * numbers and database mark are its own) does not authenticate there.
 */
function macOf(key: KeyObject, slot: string, body: string | Uint8Array): string {
  return createHmac('sha256', key).update(`${slot}\n`).update(body).digest('base64url');
}

/** `body` (a line's text up to its MAC: `{"seq":n,"draft":{…}`) with its MAC, as a whole line, newline included. */
export function authenticatedLine(key: KeyObject, slot: string, body: string): string {
  return `${body},"mac":"${macOf(key, slot, body)}"}\n`;
}

/** The journal line of entry `seq` of `slot`, newline included. */
export function journalLine(key: KeyObject, slot: string, seq: number, draft: ReceiptDraft): string {
  return authenticatedLine(key, slot, `{"seq":${seq},"draft":${JSON.stringify(draft)}`);
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
    (draft.outcome === 'allowed' || draft.outcome === 'denied' || draft.outcome === 'action-required' || draft.outcome === 'error') &&
    typeof draft.durationMs === 'number' &&
    Number.isFinite(draft.durationMs) &&
    (draft.upstreamStatus === null || Number.isSafeInteger(draft.upstreamStatus)) &&
    NULLABLE_TEXT_FIELDS.every((field) => draft[field] === null || typeof draft[field] === 'string')
  );
}

/**
 * One whole line (without its newline) as an entry, or why it is refused. The MAC is checked before anything of
 * the line is parsed: what the gateway did not write is never read as JSON.
 */
function entryOf(key: KeyObject, slot: string, line: Buffer): JournalEntry | QuarantineReason {
  const macStart = line.length - MAC_TEXT_LENGTH - MAC_CLOSE.length;
  const bodyEnd = line.length - MAC_TAIL_LENGTH;
  if (bodyEnd < 1 || !line.subarray(bodyEnd, macStart).equals(MAC_OPEN) || !line.subarray(macStart + MAC_TEXT_LENGTH).equals(MAC_CLOSE)) {
    return 'missing-mac';
  }
  const expected = Buffer.from(macOf(key, slot, line.subarray(0, bodyEnd)));
  if (!timingSafeEqual(expected, line.subarray(macStart, macStart + MAC_TEXT_LENGTH))) return 'wrong-mac';
  try {
    const entry = JSON.parse(`${line.toString('utf8', 0, bodyEnd)}}`) as JournalEntry;
    if (!Number.isSafeInteger(entry.seq) || entry.seq < 1 || !isReceiptDraft(entry.draft)) return 'malformed';
    return entry;
  } catch {
    return 'malformed';
  }
}

/**
 * Reads a journal file from its start in chunks, yielding its authentic entries `batchSize` at a time (memory
 * stays bounded whatever the file's size). Lines are split on the newline byte, which never occurs inside a
 * UTF-8 character, so each line's bytes are exactly what was written. A whole line that is refused is handed to
 * `quarantine` with its end offset; a last line without its newline (a write cut short) is skipped.
 */
function* readJournal(
  fd: number,
  key: KeyObject,
  slot: string,
  batchSize: number,
  quarantine: (line: Buffer, endOffset: number, reason: QuarantineReason) => void,
): Generator<JournalEntry[], JournalRead> {
  const buffer = Buffer.allocUnsafe(1 << 16);
  /** The start of a line that continues into the next chunk, kept across reads. */
  let remainder: Buffer = Buffer.alloc(0);
  let batch: JournalEntry[] = [];
  let maxSeq = 0;
  for (let position = 0; ; ) {
    const read = readSync(fd, buffer, 0, buffer.length, position);
    if (read === 0) break;
    const data = remainder.length > 0 ? Buffer.concat([remainder, buffer.subarray(0, read)]) : buffer.subarray(0, read);
    const dataOffset = position - remainder.length;
    position += read;
    let lineStart = 0;
    for (let newline = data.indexOf(0x0a); newline !== -1; newline = data.indexOf(0x0a, lineStart)) {
      const line = data.subarray(lineStart, newline);
      lineStart = newline + 1;
      const entry = entryOf(key, slot, line);
      // Entry numbers only grow within a file: one not above the last authentic line's is a copy appended again.
      const refused = typeof entry === 'string' ? entry : entry.seq <= maxSeq ? 'replayed' : undefined;
      if (refused) {
        quarantine(line, dataOffset + lineStart, refused);
        continue;
      }
      const accepted = entry as JournalEntry;
      maxSeq = accepted.seq;
      batch.push(accepted);
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
    }
    // Copied: the read buffer is reused by the next chunk.
    remainder = Buffer.from(data.subarray(lineStart));
  }
  if (batch.length > 0) yield batch;
  return { maxSeq, isLastLineCutShort: remainder.length > 0 };
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

/** Where the lines of `slot`'s journal that are not moved in are kept (no journal name: `journalSlots` skips it). */
export function quarantinePathOf(directory: string, slot: string): string {
  return join(directory, `receipts-journal-${slot}.quarantine.jsonl`);
}

/** Opens (creating) the journal of `slot` in `directory` and claims the slot. */
export function openReceiptJournal(directory: string, slot: string, options: { clearAtBytes?: number } = {}): ReceiptJournal {
  const clearAtBytes = options.clearAtBytes ?? CLEAR_AT_BYTES;
  const path = join(directory, `receipts-journal-${slot}.jsonl`);
  const quarantinePath = quarantinePathOf(directory, slot);
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
  let started: { key: KeyObject; onQuarantined: (counts: QuarantineCounts) => void } | undefined;
  /** The file's size: what whole lines were written since it last started empty. */
  let size = 0;
  /** Lines ending at or before this offset were screened by an earlier read: not quarantined twice. */
  let screenedUpTo = 0;
  let isClosed = false;
  const truncate = (length: number) => {
    ftruncateSync(fd, length);
    size = length;
    screenedUpTo = Math.min(screenedUpTo, length);
  };
  const entryBatches: ReceiptJournal['entryBatches'] = function* (key, batchSize, onQuarantined) {
    const quarantined: QuarantineCounts = {};
    let quarantineFd: number | undefined;
    let lastEnd = screenedUpTo;
    try {
      return yield* readJournal(fd, key, slot, batchSize, (line, endOffset, reason) => {
        if (endOffset <= screenedUpTo) return;
        quarantineFd ??= openSync(quarantinePath, 'a', 0o600);
        writeSync(quarantineFd, Buffer.concat([line, Buffer.from('\n')]));
        quarantined[reason] = (quarantined[reason] ?? 0) + 1;
        lastEnd = endOffset;
      });
    } finally {
      if (quarantineFd !== undefined) {
        // Kept before the journal that held these lines starts again, empty.
        fdatasyncSync(quarantineFd);
        closeSync(quarantineFd);
        screenedUpTo = lastEnd;
        onQuarantined(quarantined);
      }
    }
  };
  const readEntries: ReceiptJournal['readEntries'] = (key, batchSize, onBatch, onQuarantined) => {
    const batches = entryBatches(key, batchSize, onQuarantined);
    try {
      for (;;) {
        const next = batches.next();
        if (next.done) return next.value;
        onBatch(next.value);
      }
    } finally {
      batches.return({ maxSeq: 0, isLastLineCutShort: false });
    }
  };
  /**
   * Before the file is emptied or removed: when it is longer than what this process wrote, another writer
   * appended to it; its lines are screened (every entry of this process's is in the database by then).
   */
  const screenForeignLines = () => {
    if (!started || fstatSync(fd).size === size) return;
    readEntries(started.key, SCREEN_BATCH, () => undefined, started.onQuarantined);
  };
  return {
    name: slot,
    quarantinePath,
    readEntries,
    entryBatches,
    start(afterSeq, key, onQuarantined) {
      truncate(0);
      lastSeq = afterSeq;
      started = { key, onQuarantined };
    },
    append(draft) {
      if (lastSeq === undefined || started === undefined) throw new Error('the receipt journal was not started');
      const seq = lastSeq + 1;
      const line = journalLine(started.key, slot, seq, draft);
      // One write of the whole line. A short write (a full disk) is an error, and its part of a line is cut off
      // again so that the next line starts on a line of its own.
      const bytes = Buffer.byteLength(line);
      const written = writeSync(fd, line);
      if (written !== bytes) {
        truncate(size);
        throw new Error(`the receipt journal could write only ${written} of ${bytes} bytes`);
      }
      size += bytes;
      lastSeq = seq;
      return seq;
    },
    clear() {
      if (size < clearAtBytes) return;
      screenForeignLines();
      truncate(0);
    },
    sync() {
      fdatasyncSync(fd);
    },
    close({ removeFile }) {
      // Once: a failed start releases every claimed journal, some of which the log may have closed already.
      if (isClosed) return;
      isClosed = true;
      let isRemoved = removeFile;
      try {
        if (removeFile) screenForeignLines();
      } catch {
        // Not screened: the file is kept, and the next start in the slot screens it.
        isRemoved = false;
      }
      closeSync(fd);
      if (isRemoved) unlinkSync(path);
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
