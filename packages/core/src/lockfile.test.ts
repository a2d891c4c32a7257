import { describe, expect, it } from 'vitest';
import { GatewayError, emptyLock, parseLock, serialiseLock, type Lockfile } from './index.js';

describe('lockfile', () => {
  it('serialises an empty lock deterministically and reads it back', () => {
    const text = serialiseLock(emptyLock());
    expect(text).toBe(serialiseLock(parseLock(text)));
    expect(parseLock(text)).toEqual(emptyLock());
  });

  it('refuses a lock that does not match the schema, naming the problem', () => {
    const broken = { ...emptyLock(), lockVersion: 2 } as unknown as Lockfile;
    expect(() => parseLock(JSON.stringify(broken))).toThrowError(GatewayError);
    try {
      parseLock('lockVersion: 1\nlastPublication: 0\nsources: []\nextra: 1\n');
      expect.unreachable('an unknown key must be refused');
    } catch (error) {
      expect((error as GatewayError).code).toBe('LOCK_SCHEMA_INVALID');
      expect((error as GatewayError).message).toContain("'extra'");
    }
  });

  it('refuses YAML aliases in a lock', () => {
    expect(() => parseLock('a: &x 1\nlockVersion: 1\nlastPublication: *x\nsources: []\n')).toThrowError(/not valid YAML/);
  });

  it('refuses duplicate keys in a lock', () => {
    expect(() => parseLock('lockVersion: 1\nlastPublication: 0\nlastPublication: 3\nsources: []\n')).toThrowError(/not valid YAML/);
  });
});
