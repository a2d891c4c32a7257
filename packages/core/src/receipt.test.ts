import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical.js';
import { keyedDigest, receiptCanonicalJson, receiptLeafText, receiptOf, type Receipt } from './receipt.js';

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
    });
    for (let seed = 0; seed < 300; seed += 1) {
      const receipt = receiptOf(seed * 7919, draftOf(seed));
      expect(receiptLeafText(receipt)).toBe(canonicalJson(receipt));
    }
    // A field the types say cannot be undefined or NaN: the general path, which omits or refuses it.
    const hole = { ...receiptOf(1, draftOf(1)), durationMs: undefined } as unknown as Receipt;
    expect(receiptLeafText(hole)).toBe(canonicalJson(hole));
    expect(receiptLeafText(hole)).not.toContain('durationMs');
    expect(() => receiptLeafText({ ...hole, durationMs: Number.NaN })).toThrow();
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
