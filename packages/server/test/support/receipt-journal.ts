import type { ReceiptDraft } from '../../src/receipts/store.js';

/** A receipt draft as the receipt log journals one (the receipt without its number), for journals made by hand. */
export function receiptDraft(tool: string, overrides: Partial<ReceiptDraft> = {}): ReceiptDraft {
  return {
    time: new Date().toISOString(),
    session: 'session-1',
    person: 'alice@example.com',
    clientId: 'client-1',
    tool,
    source: 'orders',
    publication: null,
    fingerprint: null,
    login: null,
    outcome: 'allowed',
    reason: null,
    upstreamStatus: 200,
    durationMs: 1,
    argumentsDigest: 'hmac-sha256:00',
    resultDigest: null,
    ...overrides,
  };
}

/**
 * The text of a receipt journal holding `drafts` as entries 1, 2, … (receipts/journal.ts: one line
 * `{"seq":n,"draft":{…}}` each), as a process that stopped before moving them leaves it.
 */
export function journalText(drafts: readonly ReceiptDraft[]): string {
  return drafts.map((draft, index) => `${JSON.stringify({ seq: index + 1, draft })}\n`).join('');
}
