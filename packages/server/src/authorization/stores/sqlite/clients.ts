import { writeTransaction, type SqliteDatabase } from '../../../store/sqlite/database.js';
import type { NewClient, RegisteredClients, StoredClient } from '../ports.js';

interface ClientRow {
  client_id: string;
  secret_hash: string | null;
  metadata: string;
  created_at: number;
  last_authorized_at: number | null;
  expires_at: number;
}

/**
 * The registered clients port (../ports.ts) over table `oauth_clients`, with the hash of each secret and the
 * address a client registered from; a registration counts and inserts in one write transaction.
 */
export class SqliteRegisteredClients implements RegisteredClients {
  private readonly statements;

  constructor(private readonly database: SqliteDatabase) {
    this.statements = {
      insertClient: database.prepare(
        `INSERT INTO oauth_clients (client_id, secret_hash, metadata, registered_from, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      client: database.prepare('SELECT * FROM oauth_clients WHERE client_id = ? AND expires_at > ?'),
      touchClient: database.prepare('UPDATE oauth_clients SET last_authorized_at = ?, expires_at = ? WHERE client_id = ?'),
      deleteExpiredClients: database.prepare('DELETE FROM oauth_clients WHERE expires_at <= ?'),
      registrationsSince: database.prepare('SELECT COUNT(*) AS count FROM oauth_clients WHERE registered_from = ? AND created_at > ?'),
    };
  }

  async register(client: NewClient, limit: { since: number; max: number }, now = Date.now()): Promise<'registered' | 'limited'> {
    return writeTransaction(this.database, (): 'registered' | 'limited' => {
      const { count } = this.statements.registrationsSince.get(client.registeredFrom, limit.since) as { count: number };
      if (count >= limit.max) return 'limited';
      this.statements.insertClient.run(
        client.clientId,
        client.secretHash,
        JSON.stringify(client.metadata),
        client.registeredFrom,
        now,
        client.expiresAt,
      );
      return 'registered';
    })();
  }

  async find(clientId: string, now = Date.now()): Promise<StoredClient | undefined> {
    const row = this.statements.client.get(clientId, now) as ClientRow | undefined;
    if (!row) return undefined;
    return {
      clientId: row.client_id,
      secretHash: row.secret_hash,
      metadata: JSON.parse(row.metadata) as Record<string, unknown>,
      createdAt: row.created_at,
      lastAuthorizedAt: row.last_authorized_at,
      expiresAt: row.expires_at,
    };
  }

  async touch(clientId: string, expiresAt: number, now = Date.now()): Promise<void> {
    this.statements.touchClient.run(now, expiresAt, clientId);
  }

  async purge(now = Date.now()): Promise<void> {
    this.statements.deleteExpiredClients.run(now);
  }
}
