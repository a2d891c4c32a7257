import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { twoConnectionsEachTest } from '../../test/support/databases.js';
import { ephemeralStateMigrations, SqliteEphemeralState } from '../store/sqlite/ephemeral-state.js';
import { createRequestStates } from './request-states.js';

/** Two processes (workers, replicas): two connections to one database file. */
const processes = twoConnectionsEachTest('gateway-request-states-', ephemeralStateMigrations);

const binding = { session: 'session-1', person: 'local:alice', tool: 'get_order', fingerprint: 'sha256:abc', argumentsDigest: 'd' };

describe('requestState single use', () => {
  it('a requestState spent in one process is refused by another sharing the database', async () => {
    const key = randomBytes(32);
    const first = createRequestStates(key, new SqliteEphemeralState(processes.first));
    const second = createRequestStates(key, new SqliteEphemeralState(processes.second));
    const now = Date.now();
    const { requestState } = first.issue(binding, now);
    const inFirst = first.check(requestState, binding, now);
    if (!inFirst.ok) throw new Error(inFirst.message);
    expect(await first.spend(inFirst.claims, now)).toBe(true);
    // The replay reaches the other process: its seal and binding hold, but it was spent.
    const inSecond = second.check(requestState, binding, now);
    if (!inSecond.ok) throw new Error(inSecond.message);
    expect(await second.spend(inSecond.claims, now)).toBe(false);
    expect(await first.spend(inFirst.claims, now)).toBe(false);
  });

  it('of two retries racing with one state in two processes, exactly one spends it', async () => {
    const key = randomBytes(32);
    const first = createRequestStates(key, new SqliteEphemeralState(processes.first));
    const second = createRequestStates(key, new SqliteEphemeralState(processes.second));
    const now = Date.now();
    const { requestState } = first.issue(binding, now);
    const checked = second.check(requestState, binding, now);
    if (!checked.ok) throw new Error(checked.message);
    const spent = await Promise.all([first.spend(checked.claims, now), second.spend(checked.claims, now)]);
    expect(spent.filter(Boolean)).toHaveLength(1);
  });

  it('one process without a shared store refuses a replay from its own memory', async () => {
    const states = createRequestStates();
    const now = Date.now();
    const { requestState } = states.issue(binding, now);
    const checked = states.check(requestState, binding, now);
    if (!checked.ok) throw new Error(checked.message);
    expect(await states.spend(checked.claims, now)).toBe(true);
    expect(await states.spend(checked.claims, now)).toBe(false);
  });
});
