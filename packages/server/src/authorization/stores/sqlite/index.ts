import type { Migration, SqliteDatabase } from '../../../store/sqlite/database.js';
import { ephemeralStateMigrations, SqliteEphemeralState } from '../../../store/sqlite/ephemeral-state.js';
import type { EphemeralState } from '../../../store/ephemeral-state.js';
import { MemoryEphemeralState } from '../../../store/memory/ephemeral-state.js';
import { MemoryThrottles } from '../memory/throttles.js';
import type { AuthorizationPorts, AuthorizationStores } from '../ports.js';
import { SessionStore } from '../session-store.js';
import { SqliteAuthorizationCodes } from './authorization-codes.js';
import { SqliteRegisteredClients } from './clients.js';
import { SqliteRefreshTokens } from './refresh-tokens.js';
import { sessionMigrations } from './migrations.js';
import { SqliteSessions } from './sessions.js';
import { SqliteThrottles } from './throttles.js';

export { sessionMigrations };
export { SqliteAuthorizationCodes, SqliteRefreshTokens, SqliteRegisteredClients, SqliteSessions, SqliteThrottles };

/**
 * Tables the authorization area needs: sessions, codes, refresh tokens, registered clients, and `shared_ephemeral`
 * (the throttles' counts and the pages' ephemeral state, when workers share them; retries' spent requestStates).
 */
export const authorizationMigrations: Migration[] = [...sessionMigrations, ...ephemeralStateMigrations];

/** The SQLite adapters of the four authorization stores, over one database migrated with `sessionMigrations`. */
export function sqliteAuthorizationStores(database: SqliteDatabase): AuthorizationStores {
  return {
    sessions: new SqliteSessions(database),
    codes: new SqliteAuthorizationCodes(database),
    refreshTokens: new SqliteRefreshTokens(database),
    clients: new SqliteRegisteredClients(database),
  };
}

/**
 * Every store of the authorization area over one SQLite database (migrated with `authorizationMigrations`): what
 * the composition root builds. The throttles' counts and the pages' ephemeral state go to the database only when
 * `sharedByWorkers` (`gateway serve --workers N`: a browser's next page may reach another worker); one process
 * keeps them in memory, and writes nothing for them. `ephemeral`: the process's one ephemeral state (the
 * composition's, which its other areas use too), else one chosen by `sharedByWorkers`.
 */
export function openSqliteAuthorizationStores(
  database: SqliteDatabase,
  { sharedByWorkers = false, ephemeral }: { sharedByWorkers?: boolean; ephemeral?: EphemeralState } = {},
): AuthorizationPorts {
  return {
    ...sqliteAuthorizationStores(database),
    throttles: sharedByWorkers ? new SqliteThrottles(database) : new MemoryThrottles(),
    ephemeral: ephemeral ?? (sharedByWorkers ? new SqliteEphemeralState(database) : new MemoryEphemeralState()),
  };
}

/** The session store over the SQLite adapters (what the composition root and tests build). */
export function sqliteSessionStore(database: SqliteDatabase): SessionStore {
  return new SessionStore(sqliteAuthorizationStores(database));
}
