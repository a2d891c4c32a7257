/**
 * Approvals receipted (docs/approvals.md › Receipts and events): the approvals port with each decision (approved,
 * denied) and each expiry written to the receipt log as an action receipt naming the approver, which the outbox
 * reports as an `io.service.approval.receipted` event. The port's atomic steps decide what is receipted: a
 * decision that wrote nothing, or an expiry another process marked first, is not receipted again.
 */
import type { ReceiptOutcome } from '@gateway/core';
import { recordActionReceipt } from '../receipts/actions.js';
import type { ReceiptLog } from '../receipts/log.js';
import type { ApprovalRecord, Approvals } from './ports.js';

/** How often the gateway looks for approvals that expired unanswered or unused, so each is receipted soon after. */
export const APPROVAL_EXPIRY_SWEEP_MS = 30_000;

type Receipted = 'approved' | 'denied' | 'expired';

const OUTCOMES: Record<Receipted, { outcome: ReceiptOutcome; reason: string | null }> = {
  approved: { outcome: 'allowed', reason: null },
  denied: { outcome: 'denied', reason: 'CALL_APPROVAL_DENIED' },
  expired: { outcome: 'denied', reason: 'CALL_APPROVAL_EXPIRED' },
};

/** Writes the receipt of one approval's decision or expiry (resolves once it is durable, or in the database). */
export function receiptApproval(receipts: ReceiptLog, record: ApprovalRecord, decision: Receipted, now: number): Promise<unknown> {
  return recordActionReceipt(receipts, {
    action: { kind: 'approval', approval: record.id, decision, approver: decision === 'expired' ? null : record.decidedBy },
    session: record.sessionId,
    person: record.subject,
    clientId: record.clientId,
    tool: record.tool,
    source: record.source,
    fingerprint: record.fingerprint,
    ...OUTCOMES[decision],
    argumentsDigest: record.argumentsDigest,
    time: new Date(now),
  });
}

/** The approvals port whose decisions and expiries are receipted in `receipts` (reads go straight through). */
export function receiptedApprovals(approvals: Approvals, receipts: ReceiptLog): Approvals {
  return {
    findFor: (binding, now) => approvals.findFor(binding, now),
    request: (input, now) => approvals.request(input, now),
    find: (id, now) => approvals.find(id, now),
    use: (id, now) => approvals.use(id, now),
    list: (filter, now) => approvals.list(filter, now),
    async decide(id, decision, by, now = Date.now()) {
      const decided = await approvals.decide(id, decision, by, now);
      if (typeof decided === 'object') await receiptApproval(receipts, decided, decision, now);
      return decided;
    },
    async expire(now = Date.now()) {
      const expired = await approvals.expire(now);
      for (const record of expired) await receiptApproval(receipts, record, 'expired', now);
      return expired;
    },
  };
}

/** Marks and receipts the expired approvals every `everyMs` (unref'd); returns how to stop. */
export function startExpirySweep(approvals: Approvals, everyMs: number, warn: (message: string) => void): () => void {
  const timer = setInterval(() => {
    approvals.expire().catch((error: unknown) => warn(`approvals: the expiry sweep failed: ${(error as Error).message}`));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
