import type { Migration } from '../../../store/schema/migration.js';

/**
 * The tables of the PostgreSQL adapters of sessions, authorization codes, refresh tokens and registered clients:
 * the same steps, under the same ids, as the SQLite adapters' `sessionMigrations` (../sqlite/migrations.ts).
 * Times are epoch milliseconds (BIGINT), lists and client metadata JSONB. Only hashes of codes, refresh tokens and
 * client secrets are stored: a copy of the database lets no one act as a client or a person.
 */
export const postgresSessionMigrations: Migration[] = [
  {
    id: 'oauth-001',
    sql: `
      CREATE TABLE oauth_sessions (
        number BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        subject TEXT NOT NULL,
        person_name TEXT NOT NULL,
        client_id TEXT NOT NULL,
        client_name TEXT NOT NULL,
        tools JSONB NOT NULL,
        logins JSONB NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        revoked_at BIGINT,
        revoked_reason TEXT
      );
      CREATE INDEX oauth_sessions_person_client ON oauth_sessions (subject, client_id, number);
      CREATE TABLE oauth_codes (
        code_hash TEXT PRIMARY KEY,
        session_number BIGINT NOT NULL REFERENCES oauth_sessions (number),
        client_id TEXT NOT NULL,
        redirect_uri TEXT NOT NULL,
        code_challenge TEXT NOT NULL,
        resource TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at BIGINT
      );
      CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at);
      CREATE TABLE oauth_refresh_tokens (
        token_hash TEXT PRIMARY KEY,
        session_number BIGINT NOT NULL REFERENCES oauth_sessions (number),
        client_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at BIGINT
      );
      CREATE INDEX oauth_refresh_tokens_session ON oauth_refresh_tokens (session_number);
      CREATE INDEX oauth_refresh_tokens_expiry ON oauth_refresh_tokens (expires_at);
      CREATE TABLE oauth_clients (
        client_id TEXT PRIMARY KEY,
        secret_hash TEXT,
        metadata JSONB NOT NULL,
        registered_from TEXT,
        created_at BIGINT NOT NULL,
        last_authorized_at BIGINT,
        expires_at BIGINT NOT NULL
      );
      CREATE INDEX oauth_clients_registered_from ON oauth_clients (registered_from, created_at);
      CREATE INDEX oauth_clients_expiry ON oauth_clients (expires_at);
    `,
  },
  {
    // Refresh token rotation records its successor (docs/authorization.md › Refresh token rotation); `superseded`
    // marks a successor replaced without ever being used, which gets no grace of its own.
    id: 'oauth-002',
    sql: `
      ALTER TABLE oauth_refresh_tokens ADD COLUMN successor_hash TEXT;
      ALTER TABLE oauth_refresh_tokens ADD COLUMN superseded BOOLEAN NOT NULL DEFAULT false;
    `,
  },
  {
    // Re-approval: when /mcp asked the client to approve changed tools again, and which ones.
    id: 'oauth-003',
    sql: `
      ALTER TABLE oauth_sessions ADD COLUMN reapproval_requested_at BIGINT;
      ALTER TABLE oauth_sessions ADD COLUMN reapproval_tools JSONB;
    `,
  },
];
