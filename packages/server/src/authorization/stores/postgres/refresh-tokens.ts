import { inTransaction, type PostgresClient, type PostgresPool, type Queryable } from '../../../store/postgres/database.js';
import type { RefreshRotation, RefreshTokens, StoredRefreshToken } from '../ports.js';
import { sessionId, sessionNumber } from '../sessions.js';
import { hashToken } from '../tokens.js';

interface RefreshRow {
  session_number: number;
  client_id: string;
  expires_at: number;
  used_at: number | null;
  successor_hash: string | null;
  superseded: boolean;
}

async function insertToken(
  database: Queryable,
  hash: string,
  value: { sessionNumber: number | undefined; clientId: string; expiresAt: number },
  now: number,
): Promise<void> {
  await database.query(
    'INSERT INTO oauth_refresh_tokens (token_hash, session_number, client_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)',
    [hash, value.sessionNumber, value.clientId, now, value.expiresAt],
  );
}

/**
 * The refresh tokens port (../ports.ts) over table `oauth_refresh_tokens`. A rotation is one transaction holding
 * row locks on the presented token and, for a replay within the grace window, on its successor: concurrent
 * presentations on any replicas are decided one after the other.
 */
export class PostgresRefreshTokens implements RefreshTokens {
  constructor(private readonly pool: PostgresPool) {}

  async save(token: string, value: { sessionId: string; clientId: string; expiresAt: number }, now = Date.now()): Promise<void> {
    await insertToken(
      this.pool,
      hashToken(token),
      { sessionNumber: sessionNumber(value.sessionId), clientId: value.clientId, expiresAt: value.expiresAt },
      now,
    );
  }

  async rotate(token: string, successor: string, options: { graceMs: number; now?: number }): Promise<RefreshRotation> {
    const now = options.now ?? Date.now();
    return inTransaction(this.pool, (client) => this.rotateLocked(client, hashToken(token), hashToken(successor), options.graceMs, now));
  }

  private async rotateLocked(
    client: PostgresClient,
    hash: string,
    successorHash: string,
    graceMs: number,
    now: number,
  ): Promise<RefreshRotation> {
    const locked = async (tokenHash: string) =>
      (await client.query<RefreshRow>('SELECT * FROM oauth_refresh_tokens WHERE token_hash = $1 FOR UPDATE', [tokenHash])).rows[0];
    const row = await locked(hash);
    if (!row) return { outcome: 'unknown' };
    const session = sessionId(row.session_number);
    const next = { sessionNumber: row.session_number, clientId: row.client_id, expiresAt: row.expires_at };
    if (row.used_at === null) {
      await client.query('UPDATE oauth_refresh_tokens SET used_at = $2, successor_hash = $3 WHERE token_hash = $1', [
        hash,
        now,
        successorHash,
      ]);
      await insertToken(client, successorHash, next, now);
      return { outcome: 'rotated', sessionId: session };
    }
    if (row.superseded) return { outcome: 'reused', sessionId: session, why: 'a superseded refresh token was presented' };
    if (now - row.used_at > graceMs) {
      return { outcome: 'reused', sessionId: session, why: 'a rotated refresh token was presented after the grace window' };
    }
    const current = row.successor_hash === null ? undefined : await locked(row.successor_hash);
    if (!current || current.used_at !== null) {
      return { outcome: 'reused', sessionId: session, why: 'a rotated refresh token was presented after its successor was used' };
    }
    await client.query('UPDATE oauth_refresh_tokens SET used_at = $2, superseded = true WHERE token_hash = $1', [row.successor_hash, now]);
    await client.query('UPDATE oauth_refresh_tokens SET successor_hash = $2 WHERE token_hash = $1', [hash, successorHash]);
    await insertToken(client, successorHash, next, now);
    return { outcome: 'reissued', sessionId: session };
  }

  async find(token: string): Promise<StoredRefreshToken | undefined> {
    const { rows } = await this.pool.query<RefreshRow>('SELECT * FROM oauth_refresh_tokens WHERE token_hash = $1', [hashToken(token)]);
    const row = rows[0];
    return row
      ? { sessionId: sessionId(row.session_number), clientId: row.client_id, expiresAt: row.expires_at, usedAt: row.used_at }
      : undefined;
  }

  async purge(now = Date.now()): Promise<void> {
    await this.pool.query('DELETE FROM oauth_refresh_tokens WHERE expires_at < $1', [now]);
  }
}
