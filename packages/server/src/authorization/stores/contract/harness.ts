import type { AuthorizationStores, NewSession, SessionRecord } from '../ports.js';

/**
 * What a contract suite runs against: fresh, empty stores of one adapter (one backing database per call),
 * and how to dispose of them. A PostgreSQL adapter passes a factory of its own; the suites do not change.
 */
export interface AuthorizationStoresUnderTest {
  stores: AuthorizationStores;
  close(): Promise<void>;
}

export type AuthorizationStoresFactory = () => Promise<AuthorizationStoresUnderTest>;

export const HOUR_MS = 3_600_000;

/** A session of alice's for client-1 (codes and refresh tokens belong to one). */
export function aliceSession(overrides: Partial<NewSession> = {}): NewSession {
  return {
    subject: 'alice',
    personName: 'Alice',
    clientId: 'client-1',
    clientName: 'Editor',
    tools: [{ name: 'get_order', fingerprint: 'sha256:abc' }],
    logins: ['orders/api_key'],
    expiresAt: Date.now() + HOUR_MS,
    ...overrides,
  };
}

export async function openAliceSession(stores: AuthorizationStores, overrides: Partial<NewSession> = {}): Promise<SessionRecord> {
  return stores.sessions.open(aliceSession(overrides));
}
