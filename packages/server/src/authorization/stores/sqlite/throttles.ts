import { createHash } from 'node:crypto';
import { writeTransaction, type SqliteDatabase } from '../../../store/sqlite/database.js';
import type { ThrottleEntries, ThrottleEntry, Throttles } from '../ports.js';
import { namedEntries } from '../throttle-entries.js';

/**
 * The throttles port (../ports.ts) over table `shared_ephemeral` (store/sqlite/ephemeral-state.ts), kind
 * `throttle:<kind>`, for the workers of `gateway serve --workers N`: N workers allow what one process allows, not
 * N times as much. Keys (account names, client addresses) are stored as their SHA-256, and each update runs in one
 * write transaction (`BEGIN IMMEDIATE`), so attempts counted by different workers at once add up instead of
 * overwriting each other.
 */
export class SqliteThrottles implements Throttles {
  private readonly statements;
  private readonly transaction;

  constructor(database: SqliteDatabase) {
    this.statements = {
      put: database.prepare(
        'INSERT INTO shared_ephemeral (kind, key, value, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, key) DO UPDATE ' +
          'SET value = excluded.value, expires_at = excluded.expires_at',
      ),
      get: database.prepare('SELECT value FROM shared_ephemeral WHERE kind = ? AND key = ? AND expires_at > ?'),
      delete: database.prepare('DELETE FROM shared_ephemeral WHERE kind = ? AND key = ?'),
    };
    this.transaction = writeTransaction(database, <R>(run: () => R): R => run());
  }

  async update<R>(kind: string, keys: readonly string[], now: number, decide: (entries: ThrottleEntries) => R): Promise<R> {
    const { statements } = this;
    const rowKind = `throttle:${kind}`;
    const name = (key: string) => createHash('sha256').update(key).digest('base64url');
    const entries: ThrottleEntries = {
      get(key) {
        const row = statements.get.get(rowKind, name(key), now) as { value: string } | undefined;
        return row === undefined ? undefined : (JSON.parse(row.value) as ThrottleEntry);
      },
      set(key, entry, expiresAt) {
        const value = JSON.stringify({ count: entry.count, at: entry.at, pending: entry.pending ?? 0 });
        statements.put.run(rowKind, name(key), value, expiresAt);
      },
      delete(key) {
        statements.delete.run(rowKind, name(key));
      },
    };
    return this.transaction(() => decide(namedEntries(keys, entries))) as R;
  }
}
