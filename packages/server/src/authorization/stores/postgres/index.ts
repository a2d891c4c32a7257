import type { PostgresPool } from '../../../store/postgres/database.js';
import type { EphemeralState } from '../../../store/ephemeral-state.js';
import { postgresEphemeralState, postgresEphemeralStateMigrations } from '../../../store/postgres/ephemeral-state.js';
import type { Migration } from '../../../store/schema/migration.js';
import type { AuthorizationPorts, AuthorizationStores } from '../ports.js';
import { SessionStore } from '../session-store.js';
import { PostgresAuthorizationCodes } from './authorization-codes.js';
import { PostgresRegisteredClients } from './clients.js';
import { PostgresRefreshTokens } from './refresh-tokens.js';
import { PostgresSessions } from './sessions.js';
import { PostgresThrottles } from './throttles.js';

import { postgresSessionMigrations } from './migrations.js';

export { postgresSessionMigrations };
export { PostgresAuthorizationCodes, PostgresRefreshTokens, PostgresRegisteredClients, PostgresSessions, PostgresThrottles };

/** The PostgreSQL adapters of the four authorization stores, over one pool migrated with `postgresSessionMigrations`. */
export function postgresAuthorizationStores(pool: PostgresPool): AuthorizationStores {
  return {
    sessions: new PostgresSessions(pool),
    codes: new PostgresAuthorizationCodes(pool),
    refreshTokens: new PostgresRefreshTokens(pool),
    clients: new PostgresRegisteredClients(pool),
  };
}

/** Tables the authorization area needs on PostgreSQL: the four stores', and `shared_ephemeral` (throttles, page state). */
export const postgresAuthorizationMigrations: Migration[] = [...postgresSessionMigrations, ...postgresEphemeralStateMigrations];

/**
 * Every store of the authorization area over one PostgreSQL database (migrated with `postgresAuthorizationMigrations`):
 * the throttles' counts and the pages' ephemeral state are always in the database, because replicas share them.
 * `ephemeral`: the process's one ephemeral state (the composition's), else one over `pool`.
 */
export function postgresAuthorizationPorts(
  pool: PostgresPool,
  ephemeral: EphemeralState = postgresEphemeralState(pool),
): AuthorizationPorts {
  return { ...postgresAuthorizationStores(pool), throttles: new PostgresThrottles(pool), ephemeral };
}

/** The session store over the PostgreSQL adapters. */
export function postgresSessionStore(pool: PostgresPool): SessionStore {
  return new SessionStore(postgresAuthorizationStores(pool));
}
