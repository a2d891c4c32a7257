import { randomBytes, type KeyObject } from 'node:crypto';
import type { Vault } from '@gateway/runtime';
import { journalKeyFrom, journalLine } from '../../src/receipts/journal.js';
import { RECEIPTS_DIGEST_KEY_SECRET } from '../../src/receipts/log.js';
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

/** A receipt digest key (base64url, as the vault holds `receipts-digest-key`), for gateways started by tests. */
export function newDigestKey(): string {
  return randomBytes(32).toString('base64url');
}

/** The journal key of a digest key as `newDigestKey` makes it (what a gateway with it in its vault uses). */
export function journalKeyOf(digestKey: string): KeyObject {
  return journalKeyFrom(Buffer.from(digestKey, 'base64url'));
}

/** The journal key of the receipt log over `vault`: its digest key, created there first when it has none. */
export async function journalKeyIn(vault: Vault): Promise<KeyObject> {
  let digestKey = await vault.get(RECEIPTS_DIGEST_KEY_SECRET);
  if (!digestKey) {
    digestKey = newDigestKey();
    await vault.set(RECEIPTS_DIGEST_KEY_SECRET, digestKey);
  }
  return journalKeyOf(digestKey);
}

/**
 * The text of the receipt journal of `slot` holding `drafts` as entries 1, 2, … (receipts/journal.ts: one
 * authenticated line each), as a process that stopped before moving them leaves it.
 */
export function journalText(key: KeyObject, slot: string, drafts: readonly ReceiptDraft[], firstSeq = 1): string {
  return drafts.map((draft, index) => journalLine(key, slot, firstSeq + index, draft)).join('');
}
