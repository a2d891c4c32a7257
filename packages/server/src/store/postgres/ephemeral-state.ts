import type { EphemeralState } from '../ephemeral-state.js';
import type { Migration } from '../schema/migration.js';
import type { PostgresPool } from './database.js';

/**
 * Table `shared_ephemeral`, under the SQLite adapter's id: the ephemeral state replicas share (the ephemeral state
 * port, ../ephemeral-state.ts), and the throttles' counts (authorization/stores/postgres/throttles.ts).
 */
export const postgresEphemeralStateMigrations: Migration[] = [
  {
    id: 'shared-001',
    sql: `CREATE TABLE shared_ephemeral (
      kind TEXT NOT NULL,
      key TEXT NOT NULL,
      value TEXT NOT NULL,
      expires_at BIGINT NOT NULL,
      PRIMARY KEY (kind, key)
    );
    CREATE INDEX shared_ephemeral_expiry ON shared_ephemeral (expires_at);`,
  },
];

/** Expired rows are deleted every this many writes of one pool. */
const PURGE_EVERY_WRITES = 100;

/**
 * The ephemeral state port over `shared_ephemeral`, for replicas sharing one PostgreSQL. Each single-use step is
 * one statement: `take` is a `DELETE … RETURNING` (of concurrent ones, the others find the row gone once the first
 * commits), `claimOnce` an upsert that replaces only an expired row.
 */
export class PostgresEphemeralState implements EphemeralState {
  readonly isShared = true;
  private writes = 0;

  constructor(private readonly pool: PostgresPool) {}

  async put(kind: string, key: string, value: string, expiresAt: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO shared_ephemeral (kind, key, value, expires_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (kind, key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
      [kind, key, value, expiresAt],
    );
    await this.wrote();
  }

  async get(kind: string, key: string, now = Date.now()): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ value: string }>(
      'SELECT value FROM shared_ephemeral WHERE kind = $1 AND key = $2 AND expires_at > $3',
      [kind, key, now],
    );
    return rows[0]?.value;
  }

  async take(kind: string, key: string, now = Date.now()): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ value: string; expires_at: number }>(
      'DELETE FROM shared_ephemeral WHERE kind = $1 AND key = $2 RETURNING value, expires_at',
      [kind, key],
    );
    const row = rows[0];
    return row && row.expires_at > now ? row.value : undefined;
  }

  async delete(kind: string, key: string): Promise<void> {
    await this.pool.query('DELETE FROM shared_ephemeral WHERE kind = $1 AND key = $2', [kind, key]);
  }

  async claimOnce(kind: string, key: string, expiresAt: number, now = Date.now()): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `INSERT INTO shared_ephemeral (kind, key, value, expires_at) VALUES ($1, $2, '', $3)
       ON CONFLICT (kind, key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at
       WHERE shared_ephemeral.expires_at <= $4`,
      [kind, key, expiresAt, now],
    );
    await this.wrote();
    return (rowCount ?? 0) > 0;
  }

  async purge(now = Date.now()): Promise<void> {
    await this.pool.query('DELETE FROM shared_ephemeral WHERE expires_at <= $1', [now]);
  }

  private async wrote(): Promise<void> {
    this.writes += 1;
    if (this.writes % PURGE_EVERY_WRITES === 0) await this.purge();
  }
}

/** The ephemeral state of one PostgreSQL database migrated with `postgresEphemeralStateMigrations`. */
export function postgresEphemeralState(pool: PostgresPool): EphemeralState {
  return new PostgresEphemeralState(pool);
}
