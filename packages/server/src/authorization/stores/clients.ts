import type { SqliteDatabase } from '../../store/database.js';

export interface StoredClient {
  clientId: string;
  secretHash: string | null;
  metadata: Record<string, unknown>;
  createdAt: number;
  lastAuthorizedAt: number | null;
  expiresAt: number;
}

interface ClientRow {
  client_id: string;
  secret_hash: string | null;
  metadata: string;
  created_at: number;
  last_authorized_at: number | null;
  expires_at: number;
}

/**
 * Dynamically registered clients (table `oauth_clients`, RFC 7591), with the hash of their secret and the
 * address they registered from (for the per-address registration limit). A registration expires when idle.
 */
export class RegisteredClients {
  private readonly statements;

  constructor(database: SqliteDatabase) {
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

  register(
    client: { clientId: string; secretHash: string | null; metadata: Record<string, unknown>; registeredFrom: string; expiresAt: number },
    now = Date.now(),
  ): void {
    this.statements.insertClient.run(
      client.clientId,
      client.secretHash,
      JSON.stringify(client.metadata),
      client.registeredFrom,
      now,
      client.expiresAt,
    );
  }

  find(clientId: string, now = Date.now()): StoredClient | undefined {
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

  /** A successful authorization keeps a dynamic registration alive for another idle period. */
  touch(clientId: string, expiresAt: number, now = Date.now()): void {
    this.statements.touchClient.run(now, expiresAt, clientId);
  }

  registrationsFrom(address: string, since: number): number {
    return (this.statements.registrationsSince.get(address, since) as { count: number }).count;
  }

  /** Deletes expired registrations. */
  purge(now = Date.now()): void {
    this.statements.deleteExpiredClients.run(now);
  }
}
