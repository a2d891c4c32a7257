import { createHash } from 'node:crypto';
import { ADVISORY_LOCK_CLASS } from '../../../store/postgres/advisory-locks.js';
import { inTransaction, type PostgresPool } from '../../../store/postgres/database.js';
import type { ThrottleEntries, ThrottleEntry, Throttles } from '../ports.js';
import { namedEntries } from '../throttle-entries.js';

type Change = { entry: ThrottleEntry; expiresAt: number } | 'deleted';

/**
 * The throttles port (../ports.ts) over table `shared_ephemeral` (store/postgres/ephemeral-state.ts), kind
 * `throttle:<kind>`, for replicas sharing one PostgreSQL: N replicas allow what one process allows. Keys (account
 * names, client addresses) are stored as their SHA-256. An update is one transaction that first takes a
 * transaction-scoped advisory lock per key (in sorted order, so two updates naming the same keys cannot deadlock;
 * a row lock could not hold back a key with no row yet), then reads the keys' rows, runs `decide` over them and
 * writes what it changed: attempts counted on several replicas at once add up.
 */
export class PostgresThrottles implements Throttles {
  constructor(private readonly pool: PostgresPool) {}

  async update<R>(kind: string, keys: readonly string[], now: number, decide: (entries: ThrottleEntries) => R): Promise<R> {
    const rowKind = `throttle:${kind}`;
    const name = (key: string) => createHash('sha256').update(key).digest('base64url');
    const names = [...new Set(keys.map(name))].sort();
    return inTransaction(this.pool, async (client) => {
      for (const each of names) {
        await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ADVISORY_LOCK_CLASS.throttles, `${rowKind}\n${each}`]);
      }
      const { rows } = await client.query<{ key: string; value: string }>(
        'SELECT key, value FROM shared_ephemeral WHERE kind = $1 AND key = ANY($2::text[]) AND expires_at > $3',
        [rowKind, names, now],
      );
      const stored = new Map(rows.map((row) => [row.key, JSON.parse(row.value) as ThrottleEntry]));
      const changes = new Map<string, Change>();
      const entries: ThrottleEntries = {
        get: (key) => {
          const change = changes.get(name(key));
          if (change === 'deleted') return undefined;
          // As read back from the table: an entry set to expire by now is no entry.
          if (change) return change.expiresAt > now ? change.entry : undefined;
          return stored.get(name(key));
        },
        set: (key, entry, expiresAt) => {
          changes.set(name(key), { entry: { count: entry.count, at: entry.at, pending: entry.pending ?? 0 }, expiresAt });
        },
        delete: (key) => {
          changes.set(name(key), 'deleted');
        },
      };
      const result = decide(namedEntries(keys, entries));
      for (const [key, change] of changes) {
        if (change === 'deleted') {
          await client.query('DELETE FROM shared_ephemeral WHERE kind = $1 AND key = $2', [rowKind, key]);
        } else {
          await client.query(
            `INSERT INTO shared_ephemeral (kind, key, value, expires_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (kind, key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
            [rowKind, key, JSON.stringify(change.entry), change.expiresAt],
          );
        }
      }
      return result;
    });
  }
}
