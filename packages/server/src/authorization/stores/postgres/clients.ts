import { ADVISORY_LOCK_CLASS } from '../../../store/postgres/advisory-locks.js';
import { inTransaction, type PostgresPool } from '../../../store/postgres/database.js';
import type { NewClient, RegisteredClients, StoredClient } from '../ports.js';

interface ClientRow {
  client_id: string;
  secret_hash: string | null;
  metadata: Record<string, unknown>;
  created_at: number;
  last_authorized_at: number | null;
  expires_at: number;
}

/**
 * The registered clients port (../ports.ts) over table `oauth_clients`, with the hash of each secret and the
 * address a client registered from. Counting an address's registrations and inserting one is a transaction under
 * a transaction-scoped advisory lock on that address: row locks cannot hold back a row not yet inserted, so
 * concurrent registrations from one address (on any replicas) count one after the other.
 */
export class PostgresRegisteredClients implements RegisteredClients {
  constructor(private readonly pool: PostgresPool) {}

  async register(client: NewClient, limit: { since: number; max: number }, now = Date.now()): Promise<'registered' | 'limited'> {
    return inTransaction(this.pool, async (connection): Promise<'registered' | 'limited'> => {
      await connection.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [
        ADVISORY_LOCK_CLASS.clientRegistrations,
        client.registeredFrom,
      ]);
      const { rows } = await connection.query<{ count: number }>(
        'SELECT COUNT(*) AS count FROM oauth_clients WHERE registered_from = $1 AND created_at > $2',
        [client.registeredFrom, limit.since],
      );
      if (rows[0]!.count >= limit.max) return 'limited';
      await connection.query(
        `INSERT INTO oauth_clients (client_id, secret_hash, metadata, registered_from, created_at, expires_at)
         VALUES ($1, $2, $3::jsonb, $4, $5, $6)`,
        [client.clientId, client.secretHash, JSON.stringify(client.metadata), client.registeredFrom, now, client.expiresAt],
      );
      return 'registered';
    });
  }

  async find(clientId: string, now = Date.now()): Promise<StoredClient | undefined> {
    const { rows } = await this.pool.query<ClientRow>('SELECT * FROM oauth_clients WHERE client_id = $1 AND expires_at > $2', [
      clientId,
      now,
    ]);
    const row = rows[0];
    if (!row) return undefined;
    return {
      clientId: row.client_id,
      secretHash: row.secret_hash,
      metadata: row.metadata,
      createdAt: row.created_at,
      lastAuthorizedAt: row.last_authorized_at,
      expiresAt: row.expires_at,
    };
  }

  async touch(clientId: string, expiresAt: number, now = Date.now()): Promise<void> {
    await this.pool.query('UPDATE oauth_clients SET last_authorized_at = $2, expires_at = $3 WHERE client_id = $1', [
      clientId,
      now,
      expiresAt,
    ]);
  }

  async purge(now = Date.now()): Promise<void> {
    await this.pool.query('DELETE FROM oauth_clients WHERE expires_at <= $1', [now]);
  }
}
