/**
 * What the admin routes serve from the stored log: the export (JSON lines) and the server-side verification.
 */
import { verifyCheckpointNote, verifyReceiptLog, type LogVerification, type Receipt } from '@gateway/core';
import type { ReceiptLog } from './log.js';
import type { StoredCheckpoint } from './store.js';

/** Rows read per query. */
const PAGE = 1000;

/** The export (JSON lines): the verifier keys, every stored receipt with its recorded leaf hash, the checkpoints. */
export async function exportLinesOf(log: ReceiptLog): Promise<string[]> {
  const checkpoints = await log.store.checkpoints();
  // The anchor too, when the database lost it: a verifier then checks the receipts against it.
  const anchor = log.anchor.latest();
  if (anchor && !checkpoints.some((checkpoint) => checkpoint.note === anchor.note)) {
    const verified = verifyCheckpointNote(anchor.note, log.trustedKeys);
    checkpoints.push({
      treeSize: anchor.treeSize,
      rootHash: anchor.rootHash,
      note: anchor.note,
      verifierKey: verified?.verifierKey ?? log.verifierKey,
      createdAt: '',
    });
    checkpoints.sort((a, b) => a.treeSize - b.treeSize);
  }
  const keys = new Set<string>([...checkpoints.map((checkpoint) => checkpoint.verifierKey), log.verifierKey]);
  const lines = [...keys].map((verifierKey) => JSON.stringify({ type: 'key', origin: log.origin, verifierKey }));
  for (let from = 0; ; from += PAGE) {
    const rows = await log.store.rows(from, PAGE);
    for (const row of rows) {
      lines.push(`{"type":"receipt","leafHash":"${row.leafHash.toString('base64')}","receipt":${row.body}}`);
    }
    if (rows.length < PAGE) break;
  }
  for (const checkpoint of checkpoints) lines.push(JSON.stringify(checkpointLine(checkpoint)));
  return lines;
}

function checkpointLine(checkpoint: StoredCheckpoint) {
  return {
    type: 'checkpoint',
    treeSize: checkpoint.treeSize,
    note: checkpoint.note,
    verifierKey: checkpoint.verifierKey,
    // The anchor read back from outside the database has no time of its own.
    ...(checkpoint.createdAt ? { createdAt: checkpoint.createdAt } : {}),
  };
}

/**
 * Verifies the database: a checkpoint is signed first (over a tree consistent with the anchor, or the mismatch
 * is reported), then the stored rows up to that size (with their recorded leaf hashes and filter columns)
 * against the stored checkpoints and the anchor, with the trusted keys only (never the keys the database names).
 */
export async function verifyStoredLog(log: ReceiptLog): Promise<LogVerification> {
  const signingProblems: string[] = [];
  try {
    await log.checkpoint();
  } catch (error) {
    signingProblems.push((error as Error).message);
  }
  const head = await log.store.head();
  const receipts: Array<{ receipt: Receipt; recordedLeafHash: Buffer }> = [];
  const columnProblems: Array<{ index: number; problem: string }> = [];
  let storedCount = 0;
  for (let from = 0; ; from += PAGE) {
    const rows = await log.store.rows(from, PAGE);
    for (const row of rows) {
      // Receipts appended since the checkpoint above (by calls meanwhile) wait for the next one.
      if (row.index >= head.size) break;
      storedCount += 1;
      let receipt: Receipt;
      try {
        receipt = JSON.parse(row.body) as Receipt;
      } catch {
        receipt = { id: `receipt-${row.index}`, index: row.index } as Receipt;
        columnProblems.push({ index: row.index, problem: `receipt-${row.index} is not JSON any more` });
      }
      const columns = row.columns;
      if (
        receipt.time !== columns.time ||
        receipt.session !== columns.session ||
        receipt.person !== columns.person ||
        receipt.tool !== columns.tool ||
        receipt.outcome !== columns.outcome
      ) {
        columnProblems.push({
          index: row.index,
          problem: `receipt-${row.index}: its filter columns differ from the receipt (the row was edited)`,
        });
      }
      receipts.push({ receipt, recordedLeafHash: row.leafHash });
    }
    if (rows.length < PAGE || rows.at(-1)!.index >= head.size) break;
  }
  const anchor = log.anchor.latest();
  const result = verifyReceiptLog({
    receipts,
    checkpoints: [
      ...(await log.store.checkpoints()).map((checkpoint) => ({ note: checkpoint.note, verifierKey: checkpoint.verifierKey })),
      ...(anchor ? [{ note: anchor.note }] : []),
    ],
    trustedKeys: log.trustedKeys,
    uncoveredBound: log.checkpointEveryReceipts,
  });
  const problems = [...signingProblems, ...columnProblems.map((entry) => entry.problem), ...result.problems];
  let first = result.firstBrokenReceipt === undefined ? undefined : Number(result.firstBrokenReceipt.slice('receipt-'.length));
  for (const entry of columnProblems) if (first === undefined || entry.index < first) first = entry.index;
  if (head.size !== storedCount && first === undefined) {
    first = Math.min(storedCount, head.size);
    problems.push(`the tree head counts ${head.size} receipts but ${storedCount} are stored: receipt-${first} is missing`);
  } else if (head.size !== storedCount) {
    problems.push(`the tree head counts ${head.size} receipts but ${storedCount} are stored`);
  }
  return { ...result, ok: problems.length === 0, problems, ...(first === undefined ? {} : { firstBrokenReceipt: `receipt-${first}` }) };
}
