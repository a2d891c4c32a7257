import type { PostgresPool } from '../../../store/postgres/database.js';
import type { AuthorizationStores } from '../ports.js';
import { SessionStore } from '../session-store.js';
import { PostgresAuthorizationCodes } from './authorization-codes.js';
import { PostgresRegisteredClients } from './clients.js';
import { PostgresRefreshTokens } from './refresh-tokens.js';
import { PostgresSessions } from './sessions.js';

export { postgresSessionMigrations } from './migrations.js';
export { PostgresAuthorizationCodes, PostgresRefreshTokens, PostgresRegisteredClients, PostgresSessions };

/** The PostgreSQL adapters of the four authorization stores, over one pool migrated with `postgresSessionMigrations`. */
export function postgresAuthorizationStores(pool: PostgresPool): AuthorizationStores {
  return {
    sessions: new PostgresSessions(pool),
    codes: new PostgresAuthorizationCodes(pool),
    refreshTokens: new PostgresRefreshTokens(pool),
    clients: new PostgresRegisteredClients(pool),
  };
}

/** The session store over the PostgreSQL adapters. */
export function postgresSessionStore(pool: PostgresPool): SessionStore {
  return new SessionStore(postgresAuthorizationStores(pool));
}
