import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical.js';
import { keyedDigest, receiptCanonicalJson } from './receipt.js';

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
