import type { Lease, Leases } from '../leases.js';
import { writeTransaction, type Migration, type SqliteDatabase } from './database.js';
import { sqliteTransactionOf } from './unit-of-work.js';

/** The leases table: one row per name, kept after a release so the next holder's token still increases. */
export const leaseMigrations: Migration[] = [
  {
    id: 'leases-001',
    sql: `CREATE TABLE leases (
      name TEXT PRIMARY KEY,
      holder TEXT,
      token INTEGER NOT NULL,
      expires_at INTEGER NOT NULL
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

/** The leases port (../leases.ts) over table `leases`; each operation is one write transaction (`BEGIN IMMEDIATE`). */
export class SqliteLeases implements Leases {
  private readonly statements;
  private readonly takeAtomically;

  constructor(private readonly database: SqliteDatabase) {
    this.statements = {
      select: database.prepare('SELECT * FROM leases WHERE name = ?'),
      insert: database.prepare('INSERT INTO leases (name, holder, token, expires_at) VALUES (?, ?, 1, ?)'),
      hand: database.prepare('UPDATE leases SET holder = ?, token = token + 1, expires_at = ? WHERE name = ?'),
      extend: database.prepare('UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ? AND token = ?'),
      release: database.prepare('UPDATE leases SET holder = NULL WHERE name = ? AND holder = ? AND token = ?'),
      isHeld: database.prepare('SELECT 1 FROM leases WHERE name = ? AND holder = ? AND token = ?'),
    };
    this.takeAtomically = writeTransaction(database, (name: string, holder: string, expiresAt: number, now: number) => {
      const row = this.statements.select.get(name) as LeaseRow | undefined;
      if (!row) this.statements.insert.run(name, holder, expiresAt);
      else if (row.holder === holder && row.expires_at > now) this.statements.extend.run(expiresAt, name, holder, row.token);
      else if (row.holder === null || row.expires_at <= now) this.statements.hand.run(holder, expiresAt, name);
      else return undefined;
      return leaseOf(this.statements.select.get(name) as LeaseRow);
    });
  }

  async take(name: string, holder: string, durationMs: number, now = Date.now()): Promise<Lease | undefined> {
    return this.takeAtomically(name, holder, now + durationMs, now);
  }

  async renew(name: string, holder: string, token: number, durationMs: number, now = Date.now()): Promise<Lease | undefined> {
    // One statement: it extends only the row that still names this holder and token.
    const expiresAt = now + durationMs;
    if (this.statements.extend.run(expiresAt, name, holder, token).changes === 0) return undefined;
    return { name, holder, token, expiresAt };
  }

  async release(name: string, holder: string, token: number): Promise<boolean> {
    return this.statements.release.run(name, holder, token).changes > 0;
  }

  async holder(name: string, now = Date.now()): Promise<Lease | undefined> {
    const row = this.statements.select.get(name) as LeaseRow | undefined;
    return row && row.holder !== null && row.expires_at > now ? leaseOf(row) : undefined;
  }

  async isHeld(tx: { readonly adapter: string }, name: string, holder: string, token: number): Promise<boolean> {
    // On the unit of work's connection, inside its BEGIN IMMEDIATE: no other process takes the lease meanwhile.
    sqliteTransactionOf(tx, this.database);
    return this.statements.isHeld.get(name, holder, token) !== undefined;
  }
}

/** The leases of one database migrated with `leaseMigrations` (what the composition root builds). */
export function sqliteLeases(database: SqliteDatabase): Leases {
  return new SqliteLeases(database);
}
