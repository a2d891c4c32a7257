/**
 * Admin API routes of the receipt log (`gateway receipts …`), registered inside the admin plugin, behind its
 * bearer token: list, show, export (JSON lines), prove (inclusion proof against the latest checkpoint),
 * verify (the database, server side). docs/receipts.md documents the answers.
 */
import {
  inclusionProof,
  verifyCheckpointNote,
  verifyReceiptLog,
  type AdminReceiptList,
  type AdminReceiptProof,
  type LogVerification,
  type Receipt,
  type ReceiptOutcome,
} from '@gateway/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { BEARER_HEADERS, pathParameters, QUERY_TEXT } from '../http/route-schemas.js';
import type { ReceiptLog } from './log.js';
import type { StoredCheckpoint } from './store.js';

const OUTCOMES: readonly ReceiptOutcome[] = ['allowed', 'denied', 'action-required', 'error'];
const DEFAULT_LIST_LIMIT = 100;
const MAX_LIST_LIMIT = 1000;
const PAGE = 1000;

function exportLinesOf(log: ReceiptLog): string[] {
  const checkpoints = log.store.checkpoints();
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
    const rows = log.store.rows(from, PAGE);
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
export function verifyStoredLog(log: ReceiptLog): LogVerification {
  const signingProblems: string[] = [];
  try {
    log.checkpoint();
  } catch (error) {
    signingProblems.push((error as Error).message);
  }
  const head = log.store.head();
  const receipts: Array<{ receipt: Receipt; recordedLeafHash: Buffer }> = [];
  const columnProblems: Array<{ index: number; problem: string }> = [];
  let storedCount = 0;
  for (let from = 0; ; from += PAGE) {
    const rows = log.store.rows(from, PAGE);
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
      ...log.store.checkpoints().map((checkpoint) => ({ note: checkpoint.note, verifierKey: checkpoint.verifierKey })),
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

function receiptIndexOf(id: string): number | undefined {
  const match = /^receipt-(0|[1-9][0-9]{0,15})$/.exec(id);
  return match ? Number(match[1]) : undefined;
}

/** The filters of `GET /admin/receipts`, each one value; the handler checks what each must be (RECEIPT_FILTER_INVALID). */
const LIST_QUERY = {
  type: 'object',
  properties: Object.fromEntries(
    ['session', 'tool', 'person', 'outcome', 'since', 'until', 'limit', 'after'].map((name) => [name, QUERY_TEXT]),
  ),
} as const;
const NO_INPUT = { headers: BEARER_HEADERS } as const;
const ONE_RECEIPT = { headers: BEARER_HEADERS, params: pathParameters('id') } as const;

export function registerReceiptRoutes(app: FastifyInstance, log: ReceiptLog): void {
  const notFound = (reply: FastifyReply, id: string) =>
    reply.problem('RECEIPT_NOT_FOUND', `no receipt ${id} (ids are receipt-<n>)`, { title: 'No such receipt' });

  app.get('/receipts', { schema: { headers: BEARER_HEADERS, querystring: LIST_QUERY } }, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const invalid = (detail: string) => reply.problem('RECEIPT_FILTER_INVALID', detail, { title: 'Invalid filter' });
    if (query.outcome !== undefined && !OUTCOMES.includes(query.outcome as ReceiptOutcome)) {
      return invalid(`outcome must be one of ${OUTCOMES.join(', ')}`);
    }
    for (const name of ['since', 'until'] as const) {
      if (query[name] !== undefined && Number.isNaN(Date.parse(query[name]!))) return invalid(`${name} must be an ISO 8601 time`);
    }
    const limit = query.limit === undefined ? DEFAULT_LIST_LIMIT : Number(query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT)
      return invalid(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}`);
    const after = query.after === undefined ? undefined : receiptIndexOf(query.after);
    if (query.after !== undefined && after === undefined) return invalid('after must be a receipt id (receipt-<n>)');
    const receipts = log.store.list({
      ...(query.session ? { session: query.session } : {}),
      ...(query.tool ? { tool: query.tool } : {}),
      ...(query.person ? { person: query.person } : {}),
      ...(query.outcome ? { outcome: query.outcome as ReceiptOutcome } : {}),
      ...(query.since ? { since: new Date(query.since).toISOString() } : {}),
      ...(query.until ? { until: new Date(query.until).toISOString() } : {}),
      ...(after === undefined ? {} : { afterIndex: after }),
      limit,
    });
    reply.header('cache-control', 'no-store');
    const page: AdminReceiptList = { receipts, ...(receipts.length === limit ? { next: receipts[receipts.length - 1]!.id } : {}) };
    return page;
  });

  app.get('/receipts/export', { schema: NO_INPUT }, async (request, reply) => {
    // A checkpoint first, so the export is covered by a signature up to its last receipt. A database that is not
    // consistent with the anchor is exported all the same, unsigned, with the anchor: verifying it names why.
    try {
      log.checkpoint();
    } catch (error) {
      request.log.warn({ err: error }, 'receipt export without a new checkpoint');
    }
    const lines = exportLinesOf(log);
    reply.header('cache-control', 'no-store').header('content-type', 'application/jsonl; charset=utf-8');
    return reply.send(`${lines.join('\n')}\n`);
  });

  app.get('/receipts/verify', { schema: NO_INPUT }, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return verifyStoredLog(log);
  });

  app.get('/receipts/:id', { schema: ONE_RECEIPT }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const index = receiptIndexOf(id);
    const receipt = index === undefined ? undefined : log.store.get(index);
    if (!receipt) return notFound(reply, id);
    reply.header('cache-control', 'no-store');
    return receipt;
  });

  app.get('/receipts/:id/proof', { schema: ONE_RECEIPT }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const index = receiptIndexOf(id);
    const receipt = index === undefined ? undefined : log.store.get(index);
    if (index === undefined || !receipt) return notFound(reply, id);
    const checkpoint = log.checkpoint();
    if (!checkpoint || checkpoint.treeSize <= index) return notFound(reply, id);
    const leaves = log.store.leafHashes(checkpoint.treeSize);
    const proof: AdminReceiptProof = {
      receipt,
      leafHash: leaves[index]!.toString('base64'),
      checkpoint: { treeSize: checkpoint.treeSize, note: checkpoint.note, verifierKey: checkpoint.verifierKey },
      inclusionPath: inclusionProof(leaves, index, checkpoint.treeSize).map((hash) => hash.toString('base64')),
    };
    reply.header('cache-control', 'no-store');
    return proof;
  });
}
