/** Metadata about a stored secret; never its value. */
export interface SecretMetadata {
  name: string;
  /** ISO time of the first `set`, and of the latest `set`/`rotate`. */
  createdAt: string;
  updatedAt: string;
  /** Increments on every rotation. */
  version: number;
}

/**
 * Where secrets live. Providers: `file` (encrypted, the embedded default), `env`, `exec`. Secrets never
 * reach the database, logs, receipts or the lockfile; values are only ever returned by `get`.
 */
export interface Vault {
  readonly provider: 'file' | 'env' | 'exec';
  /** The secret's value, or undefined when the vault has no such name. */
  get(name: string): Promise<string | undefined>;
  /** Stores or replaces a value (`file` provider only; others throw VAULT_READ_ONLY). */
  set(name: string, value: string): Promise<SecretMetadata>;
  delete(name: string): Promise<boolean>;
  list(): Promise<SecretMetadata[]>;
}
