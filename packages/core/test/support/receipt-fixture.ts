import type { Receipt } from '../../src/receipt.js';

/** An allowed call's receipt at leaf `index`, every field filled, one millisecond after the one before. */
export function receiptAt(index: number): Receipt {
  return {
    id: `receipt-${index}`,
    index,
    time: new Date(1_700_000_000_000 + index).toISOString(),
    session: 'session-1',
    person: 'p',
    clientId: 'c',
    tool: 't',
    source: 's',
    publication: 'publication-1',
    fingerprint: 'sha256:x',
    login: null,
    outcome: 'allowed',
    reason: null,
    upstreamStatus: 200,
    durationMs: 1.5,
    argumentsDigest: 'hmac-sha256:00',
    resultDigest: null,
  };
}
