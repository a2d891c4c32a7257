import { describe, expect, it } from 'vitest';
import { chooseLoginAlternative, decideCall, loginAlternativesOf, type CallFacts } from './policy.js';

const base: CallFacts = {
  toolName: 'get_order',
  session: { id: 'session-1', state: 'open', expiresAt: 2_000 },
  now: 1_000,
  tool: { fingerprint: 'sha256:a', operationName: 'get_order' },
  approvedFingerprint: 'sha256:a',
  loginAlternatives: [{ logins: ['orders/api_key'] }],
  grantedLogins: new Set(['orders/api_key']),
};

const reasonOf = (facts: CallFacts) => {
  const verdict = decideCall(facts);
  return verdict.kind === 'allow' ? 'allowed' : verdict.reason;
};

describe('decideCall', () => {
  it('allows a tool in an open session, approved as published, not drifted, with a granted login', () => {
    expect(decideCall(base)).toEqual({ kind: 'allow' });
  });

  it('never runs an each-call tool unapproved: a person is asked when a gate can, it is refused when none can', () => {
    const eachCall: CallFacts = { ...base, tool: { ...base.tool!, approval: 'each-call' } };
    expect(reasonOf(eachCall)).toBe('CALL_APPROVAL_UNAVAILABLE');
    const pendingAction = { reason: 'PERSON_ACTION_REQUIRED' as const, message: 'approve this call', url: 'https://gw.example/approve/1' };
    expect(decideCall({ ...eachCall, pendingAction })).toMatchObject({ kind: 'act', action: { kind: 'visit', url: pendingAction.url } });
    expect(decideCall({ ...eachCall, callApproval: 'approved' })).toEqual({ kind: 'allow' });
    expect(reasonOf({ ...eachCall, callApproval: 'denied' })).toBe('CALL_APPROVAL_DENIED');
    // The earlier rules still come first: an approval does not reopen an ended session.
    expect(reasonOf({ ...eachCall, callApproval: 'approved', session: { ...base.session, state: 'revoked' } })).toBe('SESSION_REVOKED');
    // A tool without the review choice ignores approvals altogether.
    expect(decideCall({ ...base, callApproval: 'denied' })).toEqual({ kind: 'allow' });
  });

  it('refuses a tool no in-use publication offers', () => {
    const { tool: _tool, ...facts } = base;
    expect(reasonOf(facts)).toBe('TOOL_UNKNOWN');
  });

  it('refuses a tool outside the session', () => {
    expect(reasonOf({ ...base, approvedFingerprint: undefined })).toBe('TOOL_NOT_IN_SESSION');
  });

  it('refuses a tool whose fingerprint changed since approval', () => {
    // A person must act: approve it again (the step-up challenge encodes it).
    expect(decideCall({ ...base, approvedFingerprint: 'sha256:b' })).toMatchObject({
      kind: 'act',
      reason: 'TOOL_CHANGED_SINCE_APPROVAL',
      action: { kind: 'reapprove' },
    });
  });

  it('refuses a tool blocked by drift, naming the drift', () => {
    const verdict = decideCall({ ...base, driftReason: 'the response schema changed' });
    expect(verdict).toMatchObject({ kind: 'deny', reason: 'TOOL_BLOCKED_BY_DRIFT' });
    expect(verdict.kind === 'deny' && verdict.message).toContain('the response schema changed');
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
    expect(reasonOf({ ...base, grantedLogins: new Set(), loginAlternatives: [{ logins: ['orders/api_key'] }, { logins: [] }] })).toBe(
      'allowed',
    );
  });

  it('a pending person action answers "a person must act first" with what to show and where', () => {
    const pendingAction = { reason: 'PERSON_ACTION_REQUIRED' as const, message: 'approve it', url: 'https://gateway.test/a' };
    expect(decideCall({ ...base, pendingAction })).toEqual({
      kind: 'act',
      reason: 'PERSON_ACTION_REQUIRED',
      message: 'approve it',
      action: { kind: 'visit', url: 'https://gateway.test/a' },
    });
    // Denials come first: a person acting would not help.
    expect(reasonOf({ ...base, pendingAction, grantedLogins: new Set() })).toBe('LOGIN_NOT_IN_SESSION');
  });

  it('a refused requestState denies with its reason, before any pending action', () => {
    const requestState = { ok: false as const, reason: 'REQUEST_STATE_USED' as const, message: 'used' };
    const pendingAction = { reason: 'PERSON_ACTION_REQUIRED' as const, message: 'approve it', url: 'https://gateway.test/a' };
    expect(reasonOf({ ...base, requestState, pendingAction })).toBe('REQUEST_STATE_USED');
  });
});

describe('the login-choice rule', () => {
  it('picks the first configured alternative whose every login is granted, else names the first one missing', () => {
    const alternatives = loginAlternativesOf('orders', [{ oauth: [] }, { api_key: [], open: [] }], {
      api_key: { type: 'apiKey' },
      open: { type: 'none' },
    });
    // `oauth` has no credential: left out; a `none` scheme needs no login.
    expect(alternatives.map((alternative) => alternative.logins)).toEqual([['orders/api_key']]);
    expect(chooseLoginAlternative(alternatives, new Set(['orders/api_key'])).chosen?.schemes).toEqual(['api_key', 'open']);
    expect(chooseLoginAlternative(alternatives, new Set())).toEqual({ missing: ['orders/api_key'] });
    expect(loginAlternativesOf('orders', [], {})).toEqual([{ schemes: [], logins: [], requirement: {} }]);
  });
});
