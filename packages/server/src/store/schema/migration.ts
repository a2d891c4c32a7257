/**
 * One schema change of one adapter. Ids sort in application order; each area owns its own prefix (`drift-001`,
 * `oauth-001`), and an area's PostgreSQL migrations reuse its SQLite ids where the step is the same, so both
 * databases' `schema_migrations` read alike. An applied id never changes.
 */
export interface Migration {
  id: string;
  sql: string;
}
