import { describe, expect, it } from 'vitest';
import { returnPathOf } from '../authorization/handlers/browser-flow.js';
import { operatorClaimHolds } from '../authorization/signin/oidc.js';
import type { ApprovalRecord } from './ports.js';
import { mayDecide } from './routes.js';

const record = (approvers: string[] | null) => ({ subject: 'local:alice', approvers }) as ApprovalRecord;
const person = (name: string, roles: Array<'operator'> = [], via: 'local' | 'oidc' = 'local') => ({
  subject: `${via}:${name}`,
  name,
  via,
  roles,
});

describe('who may decide an approval', () => {
  it('without approvers: only the session’s own person', () => {
    expect(mayDecide(record(null), person('alice'))).toBe(true);
    expect(mayDecide(record(null), person('bob', ['operator']))).toBe(false);
  });

  it('with approvers: the people named, and anyone with the operator role for @operators', () => {
    expect(mayDecide(record(['bob']), person('bob'))).toBe(true);
    expect(mayDecide(record(['bob']), person('alice'))).toBe(false);
    expect(mayDecide(record(['@operators']), person('carol', ['operator']))).toBe(true);
    expect(mayDecide(record(['@operators']), person('carol'))).toBe(false);
    // A name is a local account's: an OIDC person called "bob" is not the local bob.
    expect(mayDecide(record(['bob']), person('bob', [], 'oidc'))).toBe(false);
    expect(
      mayDecide(
        record(['@operators']),
        person(
          'dana',
          operatorClaimHolds({ groups: ['ops', 'dev'] }, { claim: 'groups', values: ['ops'] }) ? ['operator' as const] : [],
          'oidc',
        ),
      ),
    ).toBe(true);
  });

  it('the OIDC operators claim maps to the operator role: a string or an array holding a configured value', () => {
    expect(operatorClaimHolds({ role: 'admin' }, { claim: 'role', values: ['admin'] })).toBe(true);
    expect(operatorClaimHolds({ role: 'user' }, { claim: 'role', values: ['admin'] })).toBe(false);
    expect(operatorClaimHolds({ role: 'admin' }, undefined)).toBe(false);
  });
});

describe('where a sign-in from a gateway page goes back to', () => {
  it('a path of this gateway (the approval page): never another site', () => {
    expect(returnPathOf('/approvals/approval-abc_1', '')).toBe('/approvals/approval-abc_1');
    expect(returnPathOf('/gw/approvals/approval-abc', '/gw')).toBe('/gw/approvals/approval-abc');
    for (const hostile of ['https://evil.test/approvals/x', '//evil.test/approvals/x', '/\\evil.test', '', null]) {
      expect(returnPathOf(hostile, '')).toBeUndefined();
    }
    expect(returnPathOf('/elsewhere', '/gw')).toBeUndefined();
  });
});
