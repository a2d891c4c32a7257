/** The `storage` section of gateway.yaml: where the gateway keeps its state (docs/config.md, docs/deployment.md). */

export type StorageKind = 'sqlite' | 'postgres';

export interface StorageConfig {
  /** `sqlite` (the embedded default: a file under gateway.dataDirectory) or `postgres` (several replicas). */
  kind?: StorageKind;
  /** With `postgres`: the vault name of the connection string (it holds a password, so it is a secret). */
  url?: string;
  /** With `postgres`: connections in each process's pool (default 10); each process also holds one for the change feed. */
  poolSize?: number;
}

/** Connections in a process's pool when `storage.poolSize` is not set. */
export const DEFAULT_POSTGRES_POOL_SIZE = 10;

export const storageSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'where the gateway keeps its state: SQLite (embedded default) or PostgreSQL (docs/deployment.md)',
  properties: {
    kind: { enum: ['sqlite', 'postgres'], default: 'sqlite' },
    url: {
      type: 'string',
      pattern: '^[A-Za-z0-9._-]+$',
      description: 'with kind postgres: vault name of the connection string (postgres://user:password@host:port/database)',
    },
    poolSize: {
      type: 'integer',
      minimum: 1,
      maximum: 200,
      default: DEFAULT_POSTGRES_POOL_SIZE,
      description:
        'with kind postgres: connections in each process pool (each process also keeps one for the change feed): ' +
        'replicas × workers × (poolSize + 1) must fit max_connections',
    },
  },
  if: { properties: { kind: { const: 'postgres' } }, required: ['kind'] },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable
  then: { required: ['url'] },
} as const;
