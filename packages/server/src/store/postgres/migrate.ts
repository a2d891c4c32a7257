import { compareText, GatewayError } from '@gateway/core';
import type { Migration } from '../schema/migration.js';
import { ADVISORY_LOCK_CLASS } from './advisory-locks.js';
import type { PostgresPool, Queryable } from './database.js';

/** How long a replica waits for another one's migrations before giving up (a stuck migration, not a slow start). */
export const MIGRATION_LOCK_TIMEOUT_MS = 120_000;

export interface MigrationState {
  /** Ids recorded in `schema_migrations`, sorted. */
  applied: string[];
  /** Ids this gateway knows that the database lacks, in application order. */
  pending: string[];
  /** Ids the database records that this gateway does not know (a newer version migrated it), sorted. */
  unknown: string[];
}

function sorted(migrations: readonly Migration[]): Migration[] {
  return [...migrations].sort((a, b) => compareText(a.id, b.id));
}

async function appliedIds(database: Queryable): Promise<string[]> {
  const { rows } = await database.query<{ present: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS present");
  if (!rows[0]?.present) return [];
  const applied = await database.query<{ id: string }>('SELECT id FROM schema_migrations');
  return applied.rows.map((row) => row.id).sort(compareText);
}

/** Where the database stands against `migrations`, read without changing anything (`gateway doctor`). */
export async function postgresMigrationState(database: Queryable, migrations: readonly Migration[]): Promise<MigrationState> {
  const applied = await appliedIds(database);
  const known = new Set(migrations.map((migration) => migration.id));
  const done = new Set(applied);
  return {
    applied,
    pending: sorted(migrations)
      .map((migration) => migration.id)
      .filter((id) => !done.has(id)),
    unknown: applied.filter((id) => !known.has(id)),
  };
}

/**
 * Applies the pending `migrations`, each in its own transaction with its row in `schema_migrations`, under a
 * session advisory lock: replicas starting together migrate one at a time, and each reads what is applied only
 * once it holds the lock. A database migrated by a newer version (ids this one does not know) is refused rather
 * than run on a schema this version was not written for. Returns the ids it applied.
 */
export async function migratePostgres(pool: PostgresPool, migrations: readonly Migration[]): Promise<string[]> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query(`SET lock_timeout = ${MIGRATION_LOCK_TIMEOUT_MS}`);
    await client.query('SELECT pg_advisory_lock($1, 0)', [ADVISORY_LOCK_CLASS.migrations]);
    await client.query('RESET lock_timeout');
    try {
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
      );
      const state = await postgresMigrationState(client, migrations);
      if (state.unknown.length > 0) {
        throw new GatewayError(
          'DATABASE_MIGRATIONS_UNKNOWN',
          `the database was migrated by a newer gateway (${state.unknown.join(', ')} unknown to this version): run that version`,
        );
      }
      const byId = new Map(migrations.map((migration) => [migration.id, migration]));
      for (const id of state.pending) {
        await client.query('BEGIN');
        try {
          await client.query(byId.get(id)!.sql);
          await client.query('INSERT INTO schema_migrations (id) VALUES ($1)', [id]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      }
      return state.pending;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, 0)', [ADVISORY_LOCK_CLASS.migrations]);
    }
  } catch (error) {
    // A client in an unknown state (a failed ROLLBACK or unlock) is closed; closing it also frees the lock.
    if (!(error instanceof GatewayError)) broken = error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    client.release(broken);
  }
}
