import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical.js';
import { leafHash } from './merkle.js';
import {
  keyedDigest,
  receiptCanonicalJson,
  receiptLeafBytes,
  receiptLeafText,
  receiptOf,
  type Receipt,
  type ReceiptAction,
} from './receipt.js';

const ACTIONS: readonly ReceiptAction[] = [
  { kind: 'approval', approval: 'approval-abc', decision: 'approved', approver: 'alice' },
  { kind: 'approval', approval: 'approval-def', decision: 'expired', approver: null },
  { kind: 'console', action: 'session.revoke', operator: 'olga \u20ac', target: 'session-3' },
];

describe('receipt canonical JSON (RFC 8785)', () => {
  it('equals the general canonicalJson on nested values, unicode keys, escapes and numbers', () => {
    const values: unknown[] = [
      { b: 1, a: [true, null, 'x'], c: { z: 0.1, y: -0, x: 1e21, w: 1e-7, v: 123456789012345680000 } },
      { '\u20ac': 1, '\r': 2, '\ud83d\ude00': 3, a: 'line\nbreak "quoted" \\ \u0007 \u2028', é: 'é' },
      [[], {}, [{}], { nested: [1, 2, { deeper: ['a', undefined, 'b'] }] }],
      { skipped: undefined, kept: 'yes', n: 5e-324, m: 1.7976931348623157e308 },
      'plain',
      42,
      null,
    ];
    for (let seed = 0; seed < 200; seed += 1) {
      values.push({
        [`k${(seed * 7919) % 97}`]: seed / 7,
        [`K${seed}`]: [seed, `s${seed}`],
        [String.fromCharCode(0x100 + seed)]: { seed },
      });
    }
    for (const value of values) expect(receiptCanonicalJson(value)).toBe(canonicalJson(value));
  });

  it('the leaf text of a receipt the log builds equals its canonical JSON, and takes the general path for a type hole', () => {
    const strings = ['plain', '', 'line\nbreak "quoted" \\ \u0007 \u2028', '\ud83d\ude00 é €', '</script>'];
    const pick = <T>(values: readonly T[], seed: number): T => values[seed % values.length]!;
    const draftOf = (seed: number): Omit<Receipt, 'id' | 'index'> => ({
      time: new Date(1_700_000_000_000 + seed).toISOString(),
      session: seed % 5 === 0 ? null : `session-${seed}`,
      person: pick([null, ...strings], seed),
      clientId: pick(strings, seed + 1),
      tool: pick(strings, seed + 2),
      source: seed % 3 === 0 ? null : 'orders',
      publication: seed % 4 === 0 ? null : 'publication-2',
      fingerprint: seed % 2 === 0 ? null : `sha256:${'ab'.repeat(32)}`,
      login: pick([null, 'orders/api_key'], seed),
      outcome: pick(['allowed', 'denied', 'error'] as const, seed),
      reason: pick([null, 'TOOL_NOT_IN_SESSION'], seed),
      upstreamStatus: pick([null, 200, 404], seed),
      durationMs: pick([0, 0.1, 12.3, 1e21, 5e-324, -0], seed),
      argumentsDigest: `hmac-sha256:${seed}`,
      resultDigest: seed % 2 === 0 ? null : 'hmac-sha256:ff',
      ...(seed % 7 === 0 ? { arguments: { z: [seed, pick(strings, seed)], a: { '\u20ac': null } } } : {}),
      ...(seed % 5 === 1 ? { approval: `approval-${pick(strings, seed)}` } : {}),
      ...(seed % 11 === 3 ? { action: pick(ACTIONS, seed) } : {}),
    });
    for (let seed = 0; seed < 300; seed += 1) {
      const draft = draftOf(seed);
      const receipt = receiptOf(seed * 7919, draft);
      expect(receipt.approval).toBe(draft.approval);
      expect(receipt.action).toEqual(draft.action);
      expect(receiptLeafText(receipt)).toBe(canonicalJson(receipt));
    }
    // A field the types say cannot be undefined or NaN: the general path, which omits or refuses it.
    const hole = { ...receiptOf(1, draftOf(1)), durationMs: undefined } as unknown as Receipt;
    expect(receiptLeafText(hole)).toBe(canonicalJson(hole));
    expect(receiptLeafText(hole)).not.toContain('durationMs');
    expect(() => receiptLeafText({ ...hole, durationMs: Number.NaN })).toThrow();
  });

  it('a receipt without the optional approval and action fields has the leaf hash it had before they existed', () => {
    // Leaf hashes computed by the receipt code before `approval` and `action` were added: stored logs still verify.
    const draft: Omit<Receipt, 'id' | 'index'> = {
      time: '2026-11-22T12:00:00.123Z',
      session: 'session-7',
      person: 'local:alice',
      clientId: 'client-1',
      tool: 'get_order',
      source: 'orders',
      publication: 'publication-2',
      fingerprint: `sha256:${'ab'.repeat(32)}`,
      login: 'orders/api_key',
      outcome: 'allowed',
      reason: null,
      upstreamStatus: 200,
      durationMs: 12.3,
      argumentsDigest: `hmac-sha256:${'01'.repeat(32)}`,
      resultDigest: null,
    };
    const hashOf = (receipt: Receipt) => leafHash(Buffer.from(receiptLeafText(receipt))).toString('hex');
    expect(hashOf(receiptOf(41, draft))).toBe('0f65fcb8fc9c31c9ff3704e13a08739022a3e77ae0b1c1d018837611cefc53f9');
    expect(hashOf(receiptOf(41, { ...draft, arguments: { orderId: 'ord_1001' } }))).toBe(
      '8e2eaa4e767c90cd987b27ec37d5aaf363aabb851edea9789f5ec27eae7ccd03',
    );
    expect(leafHash(receiptLeafBytes(receiptOf(41, draft))).toString('hex')).toBe(hashOf(receiptOf(41, draft)));
    // The new fields are covered: a receipt naming an approval, or recording an action, hashes differently.
    expect(hashOf(receiptOf(41, { ...draft, approval: 'approval-x' }))).not.toBe(hashOf(receiptOf(41, draft)));
    expect(hashOf(receiptOf(41, { ...draft, action: ACTIONS[0]! }))).not.toBe(hashOf(receiptOf(41, draft)));
  });

  it('refuses values JSON cannot hold', () => {
    expect(() => receiptCanonicalJson({ n: Number.NaN })).toThrow();
    expect(() => receiptCanonicalJson({ n: Number.POSITIVE_INFINITY })).toThrow();
  });

  it('keyed digests depend on the key and on the canonical value, not its key order', () => {
    const key = Buffer.alloc(32, 1);
    expect(keyedDigest(key, { a: 1, b: 2 })).toBe(keyedDigest(key, { b: 2, a: 1 }));
    expect(keyedDigest(key, { a: 1 })).not.toBe(keyedDigest(Buffer.alloc(32, 2), { a: 1 }));
    expect(keyedDigest(key, { a: 1 })).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
  });
});
