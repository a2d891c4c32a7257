import type { VaultProvider } from '@gateway/core';

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
 * Where secrets live. Providers: `file` (encrypted, the embedded default), `env`, `exec`, `postgres` (shared by
 * replicas, envelope-encrypted, in a database of its own). Secrets never reach the gateway's database, logs,
 * receipts or the lockfile; values are only ever returned by `get`.
 */
export interface Vault {
  readonly provider: VaultProvider;
  /** The secret's value, or undefined when the vault has no such name. */
  get(name: string): Promise<string | undefined>;
  /** Stores or replaces a value (`file` and `postgres`; the others throw VAULT_READ_ONLY). */
  set(name: string, value: string): Promise<SecretMetadata>;
  /**
   * Stores `value` only when the vault has no such name, and returns the value stored under the name afterwards:
   * `value`, or the one another process stored first. Atomic across every process sharing the vault, so keys the
   * gateway creates on first start are one key even when replicas or workers start together (`file` and
   * `postgres`; the others throw VAULT_READ_ONLY, as for `set`).
   */
  create(name: string, value: string): Promise<string>;
  delete(name: string): Promise<boolean>;
  list(): Promise<SecretMetadata[]>;
  /** Where the values are, when that is a database (`postgres`: `host:port/database`, never a password). */
  readonly location?: string;
  /** What `gateway doctor` reports beyond opening the vault (`postgres`: every stored value is under a configured key). */
  check?(): Promise<string>;
  /** Releases what the vault holds open (the `postgres` provider's connections). */
  close?(): Promise<void>;
}
