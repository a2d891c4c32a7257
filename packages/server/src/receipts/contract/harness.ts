import type { ReceiptOutcome } from '@gateway/core';
import type { ReceiptDraft, ReceiptStorage } from '../store.js';

/**
 * What the contract suite runs against: one empty database of one adapter per test, and connections to it, each
 * as one gateway process opens it (its own store and unit of work), so that two of them are two writers sharing
 * the database. A PostgreSQL adapter passes a factory of its own; the suite does not change.
 */
export interface ReceiptStorageUnderTest {
  connect(): Promise<ReceiptStorage>;
  close(): Promise<void>;
}

export type ReceiptStorageFactory = () => Promise<ReceiptStorageUnderTest>;

/** A receipt of a call to `tool`, before the log numbers it. */
export function draft(tool: string, overrides: Partial<ReceiptDraft> & { outcome?: ReceiptOutcome } = {}): ReceiptDraft {
  return {
    time: '2026-01-01T00:00:00.000Z',
    session: 'session-1',
    person: 'alice',
    clientId: 'client-1',
    tool,
    source: 'orders',
    publication: 'publication-1',
    fingerprint: 'sha256:abc',
    login: null,
    outcome: 'allowed',
    reason: null,
    upstreamStatus: 200,
    durationMs: 0.5,
    argumentsDigest: 'hmac-sha256:00',
    resultDigest: null,
    ...overrides,
  };
}
