/**
 * Action receipts (docs/receipts.md › Action receipts): a decision a person took, an approval's expiry or an
 * operator's console action, receipted in the same log as the calls (so `gateway receipts verify` and the signed
 * checkpoints cover them) and reported by the outbox as an event of the action's own type.
 */
import type { Receipt, ReceiptAction, ReceiptOutcome } from '@gateway/core';
import type { ReceiptLog } from './log.js';

export interface ActionReceipt {
  action: ReceiptAction;
  /** The session the action concerns (an approval's, a revoked one), if any. */
  session: string | null;
  /** The person's subject: an approval's session person, or the operator who acted. */
  person: string | null;
  clientId?: string | null;
  /** The tool an approval is for; empty for an action that concerns no tool. */
  tool?: string;
  source?: string | null;
  fingerprint?: string | null;
  outcome: ReceiptOutcome;
  reason?: string | null;
  /** The keyed digest of the arguments an approval is bound to; a console action's is that of `{}`. */
  argumentsDigest?: string;
  time?: Date;
}

/**
 * Records an action's receipt; resolves once it is in the database (undefined while it waits in the journal), like
 * a call's receipt (ReceiptLog.record). It is durable when this returns, or once the promise resolves without a
 * journal: callers await it before they answer.
 */
export function recordActionReceipt(log: ReceiptLog, input: ActionReceipt): Promise<Receipt | undefined> {
  return log.record({
    time: (input.time ?? new Date()).toISOString(),
    session: input.session,
    person: input.person,
    clientId: input.clientId ?? null,
    tool: input.tool ?? '',
    source: input.source ?? null,
    publication: null,
    fingerprint: input.fingerprint ?? null,
    login: null,
    outcome: input.outcome,
    reason: input.reason ?? null,
    upstreamStatus: null,
    durationMs: 0,
    argumentsValue: {},
    ...(input.argumentsDigest === undefined ? {} : { argumentsDigest: input.argumentsDigest }),
    resultValue: undefined,
    action: input.action,
  });
}
