import { writeTransaction, type SqliteDatabase } from '../../../store/sqlite/database.js';
import type { AuthorizationCodes, StoredCode } from '../ports.js';
import { sessionId, sessionNumber } from '../sessions.js';
import { hashToken } from '../tokens.js';

interface CodeRow {
  session_number: number;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  resource: string;
  expires_at: number;
  used_at: number | null;
}

/** Kept this long past their expiry, so a late second redemption is still recognised as a replay. */
const USED_CODE_RETENTION_MS = 86_400_000;

/** The authorization codes port (../ports.ts) over table `oauth_codes`; a redemption is one write transaction. */
export class SqliteAuthorizationCodes implements AuthorizationCodes {
  private readonly statements;

  constructor(private readonly database: SqliteDatabase) {
    this.statements = {
      insertCode: database.prepare(
        `INSERT INTO oauth_codes (code_hash, session_number, client_id, redirect_uri, code_challenge, resource, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      code: database.prepare('SELECT * FROM oauth_codes WHERE code_hash = ?'),
      useCode: database.prepare('UPDATE oauth_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL'),
      deleteStale: database.prepare('DELETE FROM oauth_codes WHERE expires_at < ?'),
    };
  }

  async save(code: string, value: Omit<StoredCode, 'usedAt'>): Promise<void> {
    this.statements.insertCode.run(
      hashToken(code),
      sessionNumber(value.sessionId),
      value.clientId,
      value.redirectUri,
      value.codeChallenge,
      value.resource,
      value.expiresAt,
    );
  }

  async redeem(code: string, now = Date.now()): Promise<(StoredCode & { alreadyUsed: boolean }) | undefined> {
    return writeTransaction(this.database, () => {
      const hash = hashToken(code);
      const row = this.statements.code.get(hash) as CodeRow | undefined;
      if (!row) return undefined;
      const alreadyUsed = row.used_at !== null;
      if (!alreadyUsed) this.statements.useCode.run(now, hash);
      return {
        sessionId: sessionId(row.session_number),
        clientId: row.client_id,
        redirectUri: row.redirect_uri,
        codeChallenge: row.code_challenge,
        resource: row.resource,
        expiresAt: row.expires_at,
        usedAt: row.used_at,
        alreadyUsed,
      };
    })();
  }

  async purge(now = Date.now()): Promise<void> {
    this.statements.deleteStale.run(now - USED_CODE_RETENTION_MS);
  }
}
