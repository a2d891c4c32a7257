import { writeTransaction, type SqliteDatabase } from '../../../store/sqlite/database.js';
import type { RefreshRotation, RefreshTokens, StoredRefreshToken } from '../ports.js';
import { sessionId, sessionNumber } from '../sessions.js';
import { hashToken } from '../tokens.js';

interface RefreshRow {
  session_number: number;
  client_id: string;
  expires_at: number;
  used_at: number | null;
  successor_hash: string | null;
  superseded: number;
}

/** The refresh tokens port (../ports.ts) over table `oauth_refresh_tokens`; a rotation is one write transaction. */
export class SqliteRefreshTokens implements RefreshTokens {
  private readonly statements;

  constructor(private readonly database: SqliteDatabase) {
    this.statements = {
      insertRefresh: database.prepare(
        `INSERT INTO oauth_refresh_tokens (token_hash, session_number, client_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
      ),
      refresh: database.prepare('SELECT * FROM oauth_refresh_tokens WHERE token_hash = ?'),
      useRefresh: database.prepare(
        'UPDATE oauth_refresh_tokens SET used_at = ?, successor_hash = ? WHERE token_hash = ? AND used_at IS NULL',
      ),
      replaceSuccessor: database.prepare('UPDATE oauth_refresh_tokens SET successor_hash = ? WHERE token_hash = ?'),
      supersede: database.prepare('UPDATE oauth_refresh_tokens SET used_at = ?, superseded = 1 WHERE token_hash = ? AND used_at IS NULL'),
      deleteStaleRefresh: database.prepare('DELETE FROM oauth_refresh_tokens WHERE expires_at < ?'),
    };
  }

  async save(token: string, value: { sessionId: string; clientId: string; expiresAt: number }, now = Date.now()): Promise<void> {
    this.statements.insertRefresh.run(hashToken(token), sessionNumber(value.sessionId), value.clientId, now, value.expiresAt);
  }

  async rotate(token: string, successor: string, options: { graceMs: number; now?: number }): Promise<RefreshRotation> {
    const now = options.now ?? Date.now();
    return writeTransaction(this.database, (): RefreshRotation => {
      const hash = hashToken(token);
      const row = this.statements.refresh.get(hash) as RefreshRow | undefined;
      if (!row) return { outcome: 'unknown' };
      const session = sessionId(row.session_number);
      const successorHash = hashToken(successor);
      if (row.used_at === null) {
        this.statements.useRefresh.run(now, successorHash, hash);
        this.statements.insertRefresh.run(successorHash, row.session_number, row.client_id, now, row.expires_at);
        return { outcome: 'rotated', sessionId: session };
      }
      if (row.superseded === 1) return { outcome: 'reused', sessionId: session, why: 'a superseded refresh token was presented' };
      if (now - row.used_at > options.graceMs)
        return { outcome: 'reused', sessionId: session, why: 'a rotated refresh token was presented after the grace window' };
      const next = row.successor_hash === null ? undefined : (this.statements.refresh.get(row.successor_hash) as RefreshRow | undefined);
      if (!next || next.used_at !== null)
        return { outcome: 'reused', sessionId: session, why: 'a rotated refresh token was presented after its successor was used' };
      this.statements.supersede.run(now, row.successor_hash);
      this.statements.replaceSuccessor.run(successorHash, hash);
      this.statements.insertRefresh.run(successorHash, row.session_number, row.client_id, now, row.expires_at);
      return { outcome: 'reissued', sessionId: session };
    })();
  }

  async find(token: string): Promise<StoredRefreshToken | undefined> {
    const row = this.statements.refresh.get(hashToken(token)) as RefreshRow | undefined;
    return row
      ? { sessionId: sessionId(row.session_number), clientId: row.client_id, expiresAt: row.expires_at, usedAt: row.used_at }
      : undefined;
  }

  async purge(now = Date.now()): Promise<void> {
    this.statements.deleteStaleRefresh.run(now);
  }
}
