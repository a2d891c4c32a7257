import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { signatureHeaders, signerKind } from './signature.js';

const bodies = [
  '',
  '{"specversion":"1.0","id":"evt_receipt-0_audit"}',
  '{"text":"é ✓ 😀 中文"}',
  // A lone surrogate: both sides encode it as U+FFFD (TextEncoder in the package, Buffer's UTF-8 here).
  `{"broken":"\ud800"}`,
  'x'.repeat(70_000),
];

describe('Standard Webhooks signatures (node:crypto)', () => {
  it('are byte for byte the signatures the standardwebhooks package computes, for many secrets, ids, times and bodies', () => {
    for (let round = 0; round < 40; round += 1) {
      const secret = `whsec_${randomBytes(8 + round).toString('base64')}`;
      const eventId = `evt_receipt-${round}_audit.${round}`;
      const time = new Date(1_700_000_000_000 + round * 1_234_567);
      for (const body of bodies) {
        const headers = signatureHeaders([secret], eventId, time, body);
        expect(signerKind(secret)).toBe('node:crypto');
        expect(headers['webhook-signature']).toBe(new Webhook(secret).sign(eventId, time, body));
        expect(headers['webhook-timestamp']).toBe(String(Math.floor(time.getTime() / 1000)));
        expect(headers['webhook-id']).toBe(eventId);
      }
    }
  });

  it('a secret without the whsec_ prefix signs as the package reads it', () => {
    const secret = randomBytes(24).toString('base64');
    const time = new Date();
    expect(signerKind(secret)).toBe('node:crypto');
    expect(signatureHeaders([secret], 'evt_1', time, '{}')['webhook-signature']).toBe(new Webhook(secret).sign('evt_1', time, '{}'));
  });

  it('during a rotation each of the two signatures verifies with the package under its own secret only', () => {
    const current = `whsec_${randomBytes(32).toString('base64')}`;
    const previous = `whsec_${randomBytes(32).toString('base64')}`;
    const body = '{"data":1}';
    const headers = signatureHeaders([current, previous], 'evt_2', new Date(), body);
    const [first, second] = headers['webhook-signature']!.split(' ');
    expect(new Webhook(current).verify(body, { ...headers, 'webhook-signature': first! })).toEqual({ data: 1 });
    expect(new Webhook(previous).verify(body, { ...headers, 'webhook-signature': second! })).toEqual({ data: 1 });
    expect(() => new Webhook(current).verify(body, { ...headers, 'webhook-signature': second! })).toThrow();
    expect(() => new Webhook(current).verify(`${body} `, headers)).toThrow();
  });

  it('a malformed secret is refused as the package refuses it', () => {
    expect(() => signatureHeaders(['whsec_'], 'evt_3', new Date(), '{}')).toThrow();
  });
});
