/**
 * A person's token refreshed once across the processes that share the storage (`serve --workers`, replicas): under
 * the lease of that person and login, and only when no other process refreshed meanwhile (the vault is read again
 * first). A provider that rotates refresh tokens takes a second use of a spent one for theft and revokes the grant,
 * which would unlink the person; so a process that finds the lease held waits for the tokens its holder writes.
 */
import { createHash } from 'node:crypto';
import type { GatewayError } from '@gateway/core';
import type { Leases } from '../../store/leases.js';
import type { StoredTokens } from './token-vault.js';

/** How long one process may hold a person's refresh (a token request is bounded well within it), and its waiters' step. */
const REFRESH_LEASE_MS = 15_000;
const REFRESH_WAIT_STEP_MS = 50;

export interface RefreshAcrossProcesses {
  /** Absent: this process collapses its own concurrent refreshes only (the caller's per-process map). */
  leases: Leases | undefined;
  holder: string;
  now(): number;
  read(person: string, login: string): Promise<StoredTokens | undefined>;
  isFresh(tokens: StoredTokens): boolean;
  /** The refresh itself (the token request, the vault and the store written). */
  refresh(person: string, login: string, stored: StoredTokens): Promise<StoredTokens>;
  unlinked(person: string, login: string, why: string): GatewayError;
}

export function refreshAcrossProcesses(options: RefreshAcrossProcesses) {
  const { leases, holder, now, read, isFresh, refresh, unlinked } = options;
  return async function refreshOnce(person: string, login: string, stored: StoredTokens): Promise<StoredTokens> {
    if (!leases) return refresh(person, login, stored);
    const name = `person-refresh:${createHash('sha256').update(`${person}\u0000${login}`).digest('base64url')}`;
    const deadline = now() + 2 * REFRESH_LEASE_MS;
    for (;;) {
      const lease = await leases.take(name, holder, REFRESH_LEASE_MS, now());
      if (lease) {
        try {
          const current = await read(person, login);
          if (!current) throw unlinked(person, login, 'was unlinked');
          return isFresh(current) ? current : await refresh(person, login, current);
        } finally {
          await leases.release(name, holder, lease.token).catch(() => false);
        }
      }
      await new Promise((wake) => setTimeout(wake, REFRESH_WAIT_STEP_MS));
      const current = await read(person, login);
      if (current && isFresh(current)) return current;
      if (!current) throw unlinked(person, login, 'was unlinked');
      if (now() > deadline) throw unlinked(person, login, 'could not be refreshed: another process held its refresh too long');
    }
  };
}
