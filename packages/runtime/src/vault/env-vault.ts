import { GatewayError } from '@gateway/core';
import type { SecretMetadata, Vault } from './vault.js';

/** `GATEWAY_SECRET_` + the name upper-cased, every character other than A–Z and 0–9 turned into `_`. */
export function environmentVariableFor(prefix: string, name: string): string {
  return `${prefix}${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

export function readOnly(provider: string): GatewayError {
  return new GatewayError(
    'VAULT_READ_ONLY',
    `the ${provider} vault provider is read-only: store the secret where that provider reads it (docs/vault.md)`,
  );
}

/**
 * Whether a vault refused a write because it never writes (env, exec): the one failure a first start may answer with
 * a key of its own process. Any other failure of a write (a full disk, a busy lock, an unreachable database) is
 * the vault's error, for the caller to raise.
 */
export function isVaultReadOnly(error: unknown): boolean {
  return error instanceof GatewayError && error.code === 'VAULT_READ_ONLY';
}

/**
 * Secrets from environment variables (for platforms that inject them, e.g. Kubernetes secrets as env).
 * Read on every call, so a restart with new variables is the rotation. Read-only.
 */
export function createEnvVault(options: { prefix: string; env: NodeJS.ProcessEnv; referencedNames: readonly string[] }): Vault {
  const secretValue = (name: string): string | undefined => {
    const value = options.env[environmentVariableFor(options.prefix, name)];
    return value === undefined || value === '' ? undefined : value;
  };
  return {
    provider: 'env',
    async get(name) {
      return secretValue(name);
    },
    async set() {
      throw readOnly('env');
    },
    async create() {
      throw readOnly('env');
    },
    async delete() {
      throw readOnly('env');
    },
    // Environment variables carry no history: list the names the config refers to that are set.
    async list(): Promise<SecretMetadata[]> {
      return options.referencedNames
        .filter((name) => secretValue(name) !== undefined)
        .map((name) => ({ name, createdAt: '', updatedAt: '', version: 1 }));
    },
  };
}
