/**
 * Admin API routes of the receipt log (`gateway receipts …`), registered inside the admin plugin, behind its
 * bearer token: list, show, export (JSON lines), prove (inclusion proof against the latest checkpoint),
 * verify (the database, server side). docs/receipts.md documents the answers.
 */
import type { AdminReceiptList, ReceiptOutcome } from '@gateway/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { BEARER_HEADERS, pathParameters, QUERY_TEXT } from '../http/route-schemas.js';
import type { ReceiptLog } from './log.js';
import { receiptIndexOf, receiptProof } from './proof.js';
import { exportLinesOf, verifyStoredLog } from './verification.js';

const OUTCOMES: readonly ReceiptOutcome[] = ['allowed', 'denied', 'action-required', 'error'];
const DEFAULT_LIST_LIMIT = 100;
const MAX_LIST_LIMIT = 1000;

/** The filters of `GET /admin/receipts`, each one value; the handler checks what each must be (RECEIPT_FILTER_INVALID). */
const LIST_QUERY = {
  type: 'object',
  properties: Object.fromEntries(
    ['session', 'tool', 'person', 'outcome', 'since', 'until', 'limit', 'after'].map((name) => [name, QUERY_TEXT]),
  ),
} as const;
const NO_INPUT = { headers: BEARER_HEADERS } as const;
const ONE_RECEIPT = { headers: BEARER_HEADERS, params: pathParameters('id') } as const;

/** `GET /receipts`: the filtered list, a page at a time (`next` is the `after` of the next page). */
function registerList(app: FastifyInstance, log: ReceiptLog): void {
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
    const receipts = await log.store.list({
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
}

/** `GET /receipts/export` and `GET /receipts/verify`. */
function registerExportAndVerify(app: FastifyInstance, log: ReceiptLog): void {
  app.get('/receipts/export', { schema: NO_INPUT }, async (request, reply) => {
    // A checkpoint first, so the export is covered by a signature up to its last receipt. A database that is not
    // consistent with the anchor is exported all the same, unsigned, with the anchor: verifying it names why.
    try {
      await log.checkpoint();
    } catch (error) {
      request.log.warn({ err: error }, 'receipt export without a new checkpoint');
    }
    const lines = await exportLinesOf(log);
    reply.header('cache-control', 'no-store').header('content-type', 'application/jsonl; charset=utf-8');
    return reply.send(`${lines.join('\n')}\n`);
  });

  app.get('/receipts/verify', { schema: NO_INPUT }, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return verifyStoredLog(log);
  });
}

/** `GET /receipts/:id` and `GET /receipts/:id/proof` (an inclusion proof against the latest checkpoint). */
function registerReceiptAndProof(app: FastifyInstance, log: ReceiptLog): void {
  const notFound = (reply: FastifyReply, id: string) =>
    reply.problem('RECEIPT_NOT_FOUND', `no receipt ${id} (ids are receipt-<n>)`, { title: 'No such receipt' });

  app.get('/receipts/:id', { schema: ONE_RECEIPT }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const index = receiptIndexOf(id);
    const receipt = index === undefined ? undefined : await log.store.get(index);
    if (!receipt) return notFound(reply, id);
    reply.header('cache-control', 'no-store');
    return receipt;
  });

  app.get('/receipts/:id/proof', { schema: ONE_RECEIPT }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const index = receiptIndexOf(id);
    const proof = index === undefined ? undefined : await receiptProof(log, index);
    if (!proof) return notFound(reply, id);
    reply.header('cache-control', 'no-store');
    return proof;
  });
}

export function registerReceiptRoutes(app: FastifyInstance, log: ReceiptLog): void {
  registerList(app, log);
  registerExportAndVerify(app, log);
  registerReceiptAndProof(app, log);
}
