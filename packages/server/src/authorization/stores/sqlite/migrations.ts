import type { Migration } from '../../../store/sqlite/database.js';

/**
 * The tables of the SQLite adapters of sessions (sessions.ts), authorization codes (authorization-codes.ts),
 * refresh tokens (refresh-tokens.ts) and dynamically registered clients (clients.ts), in the gateway's database.
 * One list for the four stores: `oauth-001` creates all their tables, and applied migration ids never change.
 * Only hashes of codes, refresh tokens and client secrets are stored: a copy of the database lets no one act
 * as a client or a person.
 */
export const sessionMigrations: Migration[] = [
  {
    id: 'oauth-001',
    sql: `
      CREATE TABLE oauth_sessions (
        number INTEGER PRIMARY KEY AUTOINCREMENT,
        subject TEXT NOT NULL,
        person_name TEXT NOT NULL,
        client_id TEXT NOT NULL,
        client_name TEXT NOT NULL,
        tools TEXT NOT NULL,
        logins TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        revoked_at INTEGER,
        revoked_reason TEXT
      );
      CREATE TABLE oauth_codes (
        code_hash TEXT PRIMARY KEY,
        session_number INTEGER NOT NULL REFERENCES oauth_sessions(number),
        client_id TEXT NOT NULL,
        redirect_uri TEXT NOT NULL,
        code_challenge TEXT NOT NULL,
        resource TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER
      );
      CREATE TABLE oauth_refresh_tokens (
        token_hash TEXT PRIMARY KEY,
        session_number INTEGER NOT NULL REFERENCES oauth_sessions(number),
        client_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER
      );
      CREATE INDEX oauth_refresh_tokens_session ON oauth_refresh_tokens(session_number);
      CREATE TABLE oauth_clients (
        client_id TEXT PRIMARY KEY,
        secret_hash TEXT,
        metadata TEXT NOT NULL,
        registered_from TEXT,
        created_at INTEGER NOT NULL,
        last_authorized_at INTEGER,
        expires_at INTEGER NOT NULL
      );
    `,
  },
  {
    // Refresh token rotation records its successor, so a replay within the grace window can be told apart
    // from theft (docs/authorization.md › Refresh token rotation); `superseded` marks a successor that was
    // replaced without ever being used, which gets no grace of its own.
    id: 'oauth-002',
    sql: `
      ALTER TABLE oauth_refresh_tokens ADD COLUMN successor_hash TEXT;
      ALTER TABLE oauth_refresh_tokens ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    // Re-approval (docs/authorization.md): when /mcp asked the client to approve changed tools again
    // (403 insufficient_scope), and which ones. The refresh grant of such a session is refused, so a
    // client that refreshes before re-authorizing (the v1 SDK does) is led to consent all the same.
    id: 'oauth-003',
    sql: `
      ALTER TABLE oauth_sessions ADD COLUMN reapproval_requested_at INTEGER;
      ALTER TABLE oauth_sessions ADD COLUMN reapproval_tools TEXT;
    `,
  },
];
