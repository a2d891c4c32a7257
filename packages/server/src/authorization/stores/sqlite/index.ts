import type { SqliteDatabase } from '../../../store/sqlite/database.js';
import type { AuthorizationStores } from '../ports.js';
import { SessionStore } from '../session-store.js';
import { SqliteAuthorizationCodes } from './authorization-codes.js';
import { SqliteRegisteredClients } from './clients.js';
import { SqliteRefreshTokens } from './refresh-tokens.js';
import { SqliteSessions } from './sessions.js';

export { sessionMigrations } from './migrations.js';
export { SqliteAuthorizationCodes, SqliteRefreshTokens, SqliteRegisteredClients, SqliteSessions };

/** The SQLite adapters of the four authorization stores, over one database migrated with `sessionMigrations`. */
export function sqliteAuthorizationStores(database: SqliteDatabase): AuthorizationStores {
  return {
    sessions: new SqliteSessions(database),
    codes: new SqliteAuthorizationCodes(database),
    refreshTokens: new SqliteRefreshTokens(database),
    clients: new SqliteRegisteredClients(database),
  };
}

/** The session store over the SQLite adapters (what the composition root and tests build). */
export function sqliteSessionStore(database: SqliteDatabase): SessionStore {
  return new SessionStore(sqliteAuthorizationStores(database));
}
