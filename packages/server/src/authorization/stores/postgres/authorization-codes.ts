import { inTransaction, type PostgresPool } from '../../../store/postgres/database.js';
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

/**
 * The authorization codes port (../ports.ts) over table `oauth_codes`. A redemption reads the code's row under a
 * row lock (FOR UPDATE) and marks it used in the same transaction: of concurrent redemptions on any replicas, the
 * second waits for the first to commit and then reads it used.
 */
export class PostgresAuthorizationCodes implements AuthorizationCodes {
  constructor(private readonly pool: PostgresPool) {}

  async save(code: string, value: Omit<StoredCode, 'usedAt'>): Promise<void> {
    await this.pool.query(
      `INSERT INTO oauth_codes (code_hash, session_number, client_id, redirect_uri, code_challenge, resource, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        hashToken(code),
        sessionNumber(value.sessionId),
        value.clientId,
        value.redirectUri,
        value.codeChallenge,
        value.resource,
        value.expiresAt,
      ],
    );
  }

  async redeem(code: string, now = Date.now()): Promise<(StoredCode & { alreadyUsed: boolean }) | undefined> {
    const hash = hashToken(code);
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<CodeRow>('SELECT * FROM oauth_codes WHERE code_hash = $1 FOR UPDATE', [hash]);
      const row = rows[0];
      if (!row) return undefined;
      const alreadyUsed = row.used_at !== null;
      if (!alreadyUsed) await client.query('UPDATE oauth_codes SET used_at = $2 WHERE code_hash = $1', [hash, now]);
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
    });
  }

  async purge(now = Date.now()): Promise<void> {
    await this.pool.query('DELETE FROM oauth_codes WHERE expires_at < $1', [now - USED_CODE_RETENTION_MS]);
  }
}
