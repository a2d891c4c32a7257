/**
 * Every action an operator takes in the console is receipted (operator, action, target) in the receipt log, which
 * the outbox reports as an `io.service.console.receipted` event (docs/console.md › Receipted actions). Each POST
 * handler calls this once its action took effect, and answers once the receipt is durable.
 */
import type { ConsoleActionName } from '@gateway/core';
import type { SignedInPerson } from '../authorization/signin/browser-sessions.js';
import { recordActionReceipt } from '../receipts/actions.js';
import type { ReceiptLog } from '../receipts/log.js';

export interface ConsoleAction {
  action: ConsoleActionName;
  /** What it was taken on: `session-<n>`, a webhook endpoint's name. */
  target: string;
  /** The session it concerns, when it concerns one. */
  session?: string;
}

/** Receipts an operator's console action; nothing when receipts are off (gateway.yaml › receipts). */
export async function receiptConsoleAction(
  receipts: ReceiptLog | undefined,
  operator: SignedInPerson,
  taken: ConsoleAction,
): Promise<void> {
  if (!receipts) return;
  await recordActionReceipt(receipts, {
    action: { kind: 'console', action: taken.action, operator: operator.name, target: taken.target },
    session: taken.session ?? null,
    person: operator.subject,
    outcome: 'allowed',
  });
}
