import type { PostgresPool } from '../../../store/postgres/database.js';
import type { LinkedAccount, LinkedAccounts } from '../ports.js';

interface LinkedAccountRow {
  person: string;
  login: string;
  subject: string | null;
  scopes: string[];
  linked_at: number;
  expires_at: number;
}

function accountOf(row: LinkedAccountRow): LinkedAccount {
  return {
    person: row.person,
    login: row.login,
    subject: row.subject,
    scopes: row.scopes,
    linkedAt: row.linked_at,
    expiresAt: row.expires_at,
  };
}

/** Scopes stored sorted by code point, as the SQLite adapter sorts them. */
const sortedScopes = (scopes: readonly string[]): string => JSON.stringify([...scopes].sort());

/**
 * The linked accounts port (../ports.ts) over table `linked_accounts`; each method is one statement (a re-link an
 * upsert, a refresh an UPDATE that changes nothing once the link is gone).
 */
export class PostgresLinkedAccounts implements LinkedAccounts {
  constructor(private readonly pool: PostgresPool) {}

  async link(account: LinkedAccount): Promise<void> {
    await this.pool.query(
      `INSERT INTO linked_accounts (person, login, subject, scopes, linked_at, expires_at) VALUES ($1, $2, $3, $4::jsonb, $5, $6)
       ON CONFLICT (person, login) DO UPDATE SET subject = EXCLUDED.subject, scopes = EXCLUDED.scopes,
         linked_at = EXCLUDED.linked_at, expires_at = EXCLUDED.expires_at`,
      [account.person, account.login, account.subject, sortedScopes(account.scopes), account.linkedAt, account.expiresAt],
    );
  }

  async find(person: string, login: string): Promise<LinkedAccount | undefined> {
    const { rows } = await this.pool.query<LinkedAccountRow>('SELECT * FROM linked_accounts WHERE person = $1 AND login = $2', [
      person,
      login,
    ]);
    return rows[0] ? accountOf(rows[0]) : undefined;
  }

  /** Ordered by code point (COLLATE "C"), as SQLite orders text, whatever the database's collation. */
  async list(filter: { person?: string } = {}): Promise<LinkedAccount[]> {
    const { rows } = await this.pool.query<LinkedAccountRow>(
      'SELECT * FROM linked_accounts WHERE ($1::text IS NULL OR person = $1) ORDER BY person COLLATE "C", login COLLATE "C"',
      [filter.person ?? null],
    );
    return rows.map(accountOf);
  }

  async refreshed(person: string, login: string, update: { expiresAt: number; scopes: string[] }): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      'UPDATE linked_accounts SET expires_at = $3, scopes = $4::jsonb WHERE person = $1 AND login = $2',
      [person, login, update.expiresAt, sortedScopes(update.scopes)],
    );
    return (rowCount ?? 0) > 0;
  }

  async unlink(person: string, login: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('DELETE FROM linked_accounts WHERE person = $1 AND login = $2', [person, login]);
    return (rowCount ?? 0) > 0;
  }
}
