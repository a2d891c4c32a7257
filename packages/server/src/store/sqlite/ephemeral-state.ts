import type { EphemeralState } from '../ephemeral-state.js';
import type { Migration, SqliteDatabase } from './database.js';

/**
 * Table `shared_ephemeral`: the ephemeral state the workers of `gateway serve --workers N` share (the ephemeral
 * state port, ../ephemeral-state.ts), and the throttles' counts (authorization/stores/sqlite/throttles.ts).
 */
export const ephemeralStateMigrations: Migration[] = [
  {
    id: 'shared-001',
    sql: `CREATE TABLE shared_ephemeral (
      kind TEXT NOT NULL,
      key TEXT NOT NULL,
      value TEXT NOT NULL,
      expires_at INTEGER NOT NULL,
      PRIMARY KEY (kind, key)
    );
    CREATE INDEX shared_ephemeral_expiry ON shared_ephemeral (expires_at);`,
  },
];

/** Expired rows are deleted every this many writes of one connection. */
const PURGE_EVERY_WRITES = 100;

/**
 * The ephemeral state port over `shared_ephemeral`. Each single-use step is one statement (`DELETE … RETURNING`,
 * an upsert that only replaces an expired row), so of two workers taking one key exactly one sees it.
 */
export class SqliteEphemeralState implements EphemeralState {
  readonly isShared = true;
  private readonly statements;
  private writes = 0;

  constructor(database: SqliteDatabase) {
    this.statements = {
      put: database.prepare(
        'INSERT INTO shared_ephemeral (kind, key, value, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, key) DO UPDATE ' +
          'SET value = excluded.value, expires_at = excluded.expires_at',
      ),
      get: database.prepare('SELECT value FROM shared_ephemeral WHERE kind = ? AND key = ? AND expires_at > ?'),
      take: database.prepare('DELETE FROM shared_ephemeral WHERE kind = ? AND key = ? RETURNING value, expires_at'),
      delete: database.prepare('DELETE FROM shared_ephemeral WHERE kind = ? AND key = ?'),
      claim: database.prepare(
        "INSERT INTO shared_ephemeral (kind, key, value, expires_at) VALUES (?, ?, '', ?) ON CONFLICT (kind, key) DO UPDATE " +
          'SET value = excluded.value, expires_at = excluded.expires_at WHERE shared_ephemeral.expires_at <= ?',
      ),
      purge: database.prepare('DELETE FROM shared_ephemeral WHERE expires_at <= ?'),
    };
  }

  async put(kind: string, key: string, value: string, expiresAt: number): Promise<void> {
    this.statements.put.run(kind, key, value, expiresAt);
    this.wrote();
  }

  async get(kind: string, key: string, now = Date.now()): Promise<string | undefined> {
    return (this.statements.get.get(kind, key, now) as { value: string } | undefined)?.value;
  }

  async take(kind: string, key: string, now = Date.now()): Promise<string | undefined> {
    const row = this.statements.take.get(kind, key) as { value: string; expires_at: number } | undefined;
    return row && row.expires_at > now ? row.value : undefined;
  }

  async delete(kind: string, key: string): Promise<void> {
    this.statements.delete.run(kind, key);
  }

  async claimOnce(kind: string, key: string, expiresAt: number, now = Date.now()): Promise<boolean> {
    const claimed = this.statements.claim.run(kind, key, expiresAt, now).changes > 0;
    this.wrote();
    return claimed;
  }

  async purge(now = Date.now()): Promise<void> {
    this.statements.purge.run(now);
  }

  private wrote(): void {
    this.writes += 1;
    if (this.writes % PURGE_EVERY_WRITES === 0) this.statements.purge.run(Date.now());
  }
}
