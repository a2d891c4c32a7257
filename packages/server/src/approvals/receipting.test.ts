import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { parseConfig, verifyReceiptLog } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { verifyStoredLog } from '../receipts/verification.js';
import { createReceiptLog, type ReceiptLog } from '../receipts/log.js';
import { receiptMigrations, sqliteReceiptStorage } from '../receipts/sqlite/index.js';
import { openDatabase, type SqliteDatabase } from '../store/sqlite/database.js';
import type { NewApproval } from './ports.js';
import { receiptedApprovals, startExpirySweep } from './receipting.js';
import { approvalMigrations, sqliteApprovals } from './sqlite/index.js';

let directory: { path: string; cleanup: () => Promise<void> };
let database: SqliteDatabase;
let log: ReceiptLog;

beforeEach(async () => {
  directory = await temporaryDirectory('gateway-approval-receipts-');
  database = openDatabase(join(directory.path, 'gateway.db'), [...receiptMigrations, ...approvalMigrations]);
  const loaded = parseConfig('gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n', join(directory.path, 'gateway.yaml'));
  log = await createReceiptLog({
    ...sqliteReceiptStorage(database),
    vault: await createVault(loaded, { env: { PATH: process.env.PATH } }),
    loaded,
  });
});

afterEach(async () => {
  await log.close();
  database.close();
  await directory.cleanup();
});

const NOW = 1_800_000_000_000;
const call = (argumentsDigest: string, expiresAt = NOW + 60_000): NewApproval => ({
  sessionId: 'session-4',
  tool: 'refund_order',
  fingerprint: 'sha256:aaa',
  argumentsDigest,
  subject: 'local:alice',
  personName: 'alice',
  clientId: 'client-1',
  clientName: 'Editor',
  source: 'orders',
  target: 'POST /orders/{orderId}/refund',
  argumentsPreview: '{}',
  approvers: ['@operators'],
  expiresAt,
});

it('each decision and each expiry is receipted once with the approver, and the log with them verifies', async () => {
  const approvals = receiptedApprovals(sqliteApprovals(database), log);
  const approved = await approvals.request(call('hmac-sha256:1'), NOW);
  const denied = await approvals.request(call('hmac-sha256:2'), NOW);
  const unanswered = await approvals.request(call('hmac-sha256:3'), NOW);
  await approvals.decide(approved.id, 'approved', 'olga', NOW + 1);
  await approvals.decide(denied.id, 'denied', 'olga', NOW + 2);
  // A decision that changes nothing is not receipted.
  expect(await approvals.decide(denied.id, 'approved', 'mallory', NOW + 3)).toBe('not-waiting');
  expect(await approvals.expire(NOW + 60_000)).toHaveLength(2); // the unanswered one and the unused approved one
  expect(await approvals.expire(NOW + 120_000)).toEqual([]);

  const receipts = await log.store.list({ limit: 10 });
  const summaries = receipts.map((receipt) => [receipt.action, receipt.outcome, receipt.reason] as const);
  // The two expiries in whichever order the one statement marked them.
  const approvalOf = (summary: (typeof summaries)[number]) => (summary[0]?.kind === 'approval' ? summary[0].approval : '');
  const expiries = summaries.slice(2).sort((a, b) => approvalOf(a).localeCompare(approvalOf(b)));
  expect([...summaries.slice(0, 2), ...expiries]).toEqual([
    [{ kind: 'approval', approval: approved.id, decision: 'approved', approver: 'olga' }, 'allowed', null],
    [{ kind: 'approval', approval: denied.id, decision: 'denied', approver: 'olga' }, 'denied', 'CALL_APPROVAL_DENIED'],
    ...[approved.id, unanswered.id]
      .sort((a, b) => a.localeCompare(b))
      .map((id) => [{ kind: 'approval', approval: id, decision: 'expired', approver: null }, 'denied', 'CALL_APPROVAL_EXPIRED']),
  ]);
  expect(receipts[0]).toMatchObject({
    session: 'session-4',
    person: 'local:alice',
    tool: 'refund_order',
    argumentsDigest: 'hmac-sha256:1',
  });
  // The approver is a name; nothing of the approval's preview or approvers list is copied into the receipt.
  expect(JSON.stringify(receipts)).not.toContain('@operators');

  // The real SQLite file's log verifies (a checkpoint signed over these leaves), and so does its export.
  const verified = await verifyStoredLog(log);
  expect(verified).toMatchObject({ ok: true, problems: [] });
  const rows = await log.store.rows(0, 10);
  const exported = verifyReceiptLog({
    receipts: rows.map((row) => ({ receipt: JSON.parse(row.body), recordedLeafHash: row.leafHash })),
    checkpoints: (await log.store.checkpoints()).map((checkpoint) => ({ note: checkpoint.note, verifierKey: checkpoint.verifierKey })),
    trustedKeys: log.trustedKeys,
  });
  expect(exported.ok).toBe(true);
});

it('the sweep marks and receipts an expiry nobody came back for', async () => {
  const approvals = receiptedApprovals(sqliteApprovals(database), log);
  const asked = await approvals.request(call('hmac-sha256:9', Date.now() + 20), Date.now());
  const stop = startExpirySweep(approvals, 25, () => undefined);
  try {
    const deadline = Date.now() + 5_000;
    while ((await log.store.head()).size === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  } finally {
    stop();
  }
  expect((await log.store.list({ limit: 10 })).map((receipt) => receipt.action)).toEqual([
    { kind: 'approval', approval: asked.id, decision: 'expired', approver: null },
  ]);
});
