import { describe, expect, it } from 'vitest';
import { decideCall, type CallFacts } from './policy.js';

const base: CallFacts = {
  toolName: 'get_order',
  session: { id: 'session-1', state: 'open', expiresAt: 2_000 },
  now: 1_000,
  tool: { fingerprint: 'sha256:a', operationName: 'get_order' },
  approvedFingerprint: 'sha256:a',
  loginAlternatives: [['orders/api_key']],
  grantedLogins: new Set(['orders/api_key']),
};

const reasonOf = (facts: CallFacts) => {
  const verdict = decideCall(facts);
  return verdict.allowed ? 'allowed' : verdict.reason;
};

describe('decideCall', () => {
  it('allows a tool in an open session, approved as published, not drifted, with a granted login', () => {
    expect(decideCall(base)).toEqual({ allowed: true });
  });

  it('refuses a tool no in-use publication offers', () => {
    const { tool: _tool, ...facts } = base;
    expect(reasonOf(facts)).toBe('TOOL_UNKNOWN');
  });

  it('refuses a tool outside the session', () => {
    expect(reasonOf({ ...base, approvedFingerprint: undefined })).toBe('TOOL_NOT_IN_SESSION');
  });

  it('refuses a tool whose fingerprint changed since approval', () => {
    expect(reasonOf({ ...base, approvedFingerprint: 'sha256:b' })).toBe('TOOL_CHANGED_SINCE_APPROVAL');
  });

  it('refuses a tool blocked by drift, naming the drift', () => {
    const verdict = decideCall({ ...base, driftReason: 'the response schema changed' });
    expect(verdict).toMatchObject({ allowed: false, reason: 'TOOL_BLOCKED_BY_DRIFT' });
    expect(!verdict.allowed && verdict.message).toContain('the response schema changed');
  });

  it('refuses a revoked session as SESSION_REVOKED and an expired one as SESSION_EXPIRED', () => {
    expect(reasonOf({ ...base, session: { ...base.session, state: 'revoked' } })).toBe('SESSION_REVOKED');
    expect(reasonOf({ ...base, session: { ...base.session, state: 'expired' } })).toBe('SESSION_EXPIRED');
    // The store read it as open, but its time limit has passed since.
    expect(reasonOf({ ...base, now: 2_000 })).toBe('SESSION_EXPIRED');
  });

  it('names the ended session before anything about the tool', () => {
    const { tool: _tool, ...unknown } = base;
    expect(reasonOf({ ...unknown, session: { ...base.session, state: 'revoked' } })).toBe('SESSION_REVOKED');
    expect(reasonOf({ ...base, approvedFingerprint: undefined, session: { ...base.session, state: 'expired' } })).toBe('SESSION_EXPIRED');
  });

  it('refuses when no security alternative has all its logins granted; allows one needing none', () => {
    expect(reasonOf({ ...base, grantedLogins: new Set() })).toBe('LOGIN_NOT_IN_SESSION');
    expect(reasonOf({ ...base, grantedLogins: new Set(), loginAlternatives: [['orders/api_key'], []] })).toBe('allowed');
  });
});
