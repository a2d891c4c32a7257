import type { Lease, Leases } from '../leases.js';
import type { Migration } from '../schema/migration.js';
import type { Transaction } from '../unit-of-work.js';
import type { PostgresPool } from './database.js';
import { postgresClientOf } from './unit-of-work.js';

/** The leases table, under the SQLite adapter's id: one row per name, kept after a release so tokens keep growing. */
export const postgresLeaseMigrations: Migration[] = [
  {
    id: 'leases-001',
    sql: `CREATE TABLE leases (
      name TEXT PRIMARY KEY,
      holder TEXT,
      token BIGINT NOT NULL,
      expires_at BIGINT NOT NULL
    );`,
  },
];

interface LeaseRow {
  name: string;
  holder: string | null;
  token: number;
  expires_at: number;
}

function leaseOf(row: LeaseRow): Lease {
  return { name: row.name, holder: row.holder!, token: row.token, expiresAt: row.expires_at };
}

/**
 * The leases port (../leases.ts) over table `leases`, every operation one statement. Taking is an upsert whose
 * update applies only when the lease is free, expired or already this holder's: concurrent takes on any replicas
 * meet on the name's row (the insert's conflict, then its row lock), and exactly one of them gets a free lease.
 */
export class PostgresLeases implements Leases {
  constructor(private readonly pool: PostgresPool) {}

  async take(name: string, holder: string, durationMs: number, now = Date.now()): Promise<Lease | undefined> {
    const { rows } = await this.pool.query<LeaseRow>(
      `INSERT INTO leases (name, holder, token, expires_at) VALUES ($1, $2, 1, $3)
       ON CONFLICT (name) DO UPDATE SET
         holder = EXCLUDED.holder,
         token = CASE WHEN leases.holder = EXCLUDED.holder AND leases.expires_at > $4 THEN leases.token ELSE leases.token + 1 END,
         expires_at = EXCLUDED.expires_at
       WHERE leases.holder IS NULL OR leases.expires_at <= $4 OR leases.holder = EXCLUDED.holder
       RETURNING *`,
      [name, holder, now + durationMs, now],
    );
    return rows[0] ? leaseOf(rows[0]) : undefined;
  }

  async renew(name: string, holder: string, token: number, durationMs: number, now = Date.now()): Promise<Lease | undefined> {
    const { rows } = await this.pool.query<LeaseRow>(
      'UPDATE leases SET expires_at = $4 WHERE name = $1 AND holder = $2 AND token = $3 RETURNING *',
      [name, holder, token, now + durationMs],
    );
    return rows[0] ? leaseOf(rows[0]) : undefined;
  }

  async release(name: string, holder: string, token: number): Promise<boolean> {
    const { rowCount } = await this.pool.query('UPDATE leases SET holder = NULL WHERE name = $1 AND holder = $2 AND token = $3', [
      name,
      holder,
      token,
    ]);
    return (rowCount ?? 0) > 0;
  }

  async holder(name: string, now = Date.now()): Promise<Lease | undefined> {
    const { rows } = await this.pool.query<LeaseRow>('SELECT * FROM leases WHERE name = $1 AND holder IS NOT NULL AND expires_at > $2', [
      name,
      now,
    ]);
    return rows[0] ? leaseOf(rows[0]) : undefined;
  }

  async isHeld(tx: Transaction, name: string, holder: string, token: number): Promise<boolean> {
    // FOR SHARE: a take (its upsert) or a release of this name waits for `tx` to end.
    const { rows } = await postgresClientOf(tx, this.pool).query(
      'SELECT 1 FROM leases WHERE name = $1 AND holder = $2 AND token = $3 FOR SHARE',
      [name, holder, token],
    );
    return rows.length > 0;
  }
}

/** The leases of one PostgreSQL database migrated with `postgresLeaseMigrations`. */
export function postgresLeases(pool: PostgresPool): Leases {
  return new PostgresLeases(pool);
}
