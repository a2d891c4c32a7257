import { createSecretKey, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openRequestState, sealRequestState, type RequestStateClaims } from './request-state.js';

const key = createSecretKey(randomBytes(32));
const binding = { session: 'session-1', person: 'alice', tool: 'get_order', fingerprint: 'sha256:a', argumentsDigest: 'hmac-sha256:1' };
const claims: RequestStateClaims = { ...binding, expiresAt: 2_000, nonce: 'n1' };

describe('requestState', () => {
  it('opens for the very call it was issued for, before its expiry', () => {
    expect(openRequestState(sealRequestState(claims, key), key, binding, 1_000)).toEqual({ ok: true, claims });
  });

  it('a changed byte, another key or another binding is REQUEST_STATE_INVALID', () => {
    const sealed = sealRequestState(claims, key);
    const [version, payload, tag] = sealed.split('.') as [string, string, string];
    const forged = Buffer.from(JSON.stringify({ ...claims, tool: 'delete_order' })).toString('base64url');
    for (const text of [`${version}.${forged}.${tag}`, `${version}.${payload}.${tag.slice(0, -2)}AA`, 'garbage', '']) {
      expect(openRequestState(text, key, binding, 1_000)).toMatchObject({ ok: false, reason: 'REQUEST_STATE_INVALID' });
    }
    expect(openRequestState(sealed, createSecretKey(randomBytes(32)), binding, 1_000)).toMatchObject({ reason: 'REQUEST_STATE_INVALID' });
    for (const name of Object.keys(binding) as Array<keyof typeof binding>) {
      expect(openRequestState(sealed, key, { ...binding, [name]: 'other' }, 1_000)).toMatchObject({ reason: 'REQUEST_STATE_INVALID' });
    }
  });

  it('past its expiry it is REQUEST_STATE_EXPIRED', () => {
    expect(openRequestState(sealRequestState(claims, key), key, binding, 2_000)).toMatchObject({
      ok: false,
      reason: 'REQUEST_STATE_EXPIRED',
    });
  });
});
