import type { SqliteDatabase } from '../../../store/sqlite/database.js';
import type { LinkedAccount, LinkedAccounts } from '../ports.js';

interface LinkedAccountRow {
  person: string;
  login: string;
  subject: string | null;
  scopes: string;
  linked_at: number;
  expires_at: number;
}

function accountOf(row: LinkedAccountRow): LinkedAccount {
  return {
    person: row.person,
    login: row.login,
    subject: row.subject,
    scopes: JSON.parse(row.scopes) as string[],
    linkedAt: row.linked_at,
    expiresAt: row.expires_at,
  };
}

/** The linked accounts port (../ports.ts) over table `linked_accounts`; each method is one statement. */
export class SqliteLinkedAccounts implements LinkedAccounts {
  private readonly statements;

  constructor(database: SqliteDatabase) {
    this.statements = {
      upsert: database.prepare(
        `INSERT INTO linked_accounts (person, login, subject, scopes, linked_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (person, login) DO UPDATE SET subject = excluded.subject, scopes = excluded.scopes,
           linked_at = excluded.linked_at, expires_at = excluded.expires_at`,
      ),
      find: database.prepare('SELECT * FROM linked_accounts WHERE person = ? AND login = ?'),
      all: database.prepare('SELECT * FROM linked_accounts ORDER BY person, login'),
      ofPerson: database.prepare('SELECT * FROM linked_accounts WHERE person = ? ORDER BY login'),
      refreshed: database.prepare('UPDATE linked_accounts SET expires_at = ?, scopes = ? WHERE person = ? AND login = ?'),
      remove: database.prepare('DELETE FROM linked_accounts WHERE person = ? AND login = ?'),
    };
  }

  async link(account: LinkedAccount): Promise<void> {
    this.statements.upsert.run(
      account.person,
      account.login,
      account.subject,
      JSON.stringify([...account.scopes].sort()),
      account.linkedAt,
      account.expiresAt,
    );
  }

  async find(person: string, login: string): Promise<LinkedAccount | undefined> {
    const row = this.statements.find.get(person, login) as LinkedAccountRow | undefined;
    return row ? accountOf(row) : undefined;
  }

  async list(filter: { person?: string } = {}): Promise<LinkedAccount[]> {
    const rows = (
      filter.person === undefined ? this.statements.all.all() : this.statements.ofPerson.all(filter.person)
    ) as LinkedAccountRow[];
    return rows.map(accountOf);
  }

  async refreshed(person: string, login: string, update: { expiresAt: number; scopes: string[] }): Promise<boolean> {
    return this.statements.refreshed.run(update.expiresAt, JSON.stringify([...update.scopes].sort()), person, login).changes > 0;
  }

  async unlink(person: string, login: string): Promise<boolean> {
    return this.statements.remove.run(person, login).changes > 0;
  }
}
