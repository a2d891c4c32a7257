/**
 * The vault: where secrets live. `createVault` picks the provider from `vault.provider` in gateway.yaml.
 * docs/vault.md documents the providers, key handling, rotation and the exec contract.
 */
import { join } from 'node:path';
import { GatewayError, resolveConfigPath, type LoadedConfig } from '@gateway/core';
import { createEnvVault } from './env-vault.js';
import { createExecVault } from './exec-vault.js';
import { createFileVault } from './file-vault.js';
import type { Vault } from './vault.js';

export type { SecretMetadata, Vault } from './vault.js';
export { environmentVariableFor } from './env-vault.js';

export interface CreateVaultOptions {
  /** Environment read by the `env` provider, the file provider's key variable and the exec command (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/** Where the file provider keeps the vault and its key for this config. */
export function fileVaultPaths(loaded: LoadedConfig): { path: string; keyFile: string } {
  const dataDirectory = resolveConfigPath(loaded, loaded.config.gateway.dataDirectory ?? '.gateway');
  const file = loaded.config.vault?.file ?? {};
  return {
    path: file.path ? resolveConfigPath(loaded, file.path) : join(dataDirectory, 'vault.json'),
    keyFile: file.keyFile ? resolveConfigPath(loaded, file.keyFile) : join(dataDirectory, 'vault.key'),
  };
}

/** Every vault name the config refers to: credential secrets and the admin token. */
export function referencedSecretNames(loaded: LoadedConfig): string[] {
  const names = new Set<string>([loaded.config.admin?.tokenSecret ?? 'admin-token']);
  // The PostgreSQL connection string holds the database password.
  if (loaded.config.storage?.kind === 'postgres' && loaded.config.storage.url) names.add(loaded.config.storage.url);
  for (const source of Object.values(loaded.config.sources)) {
    switch (source.kind) {
      case 'openapi':
        for (const credential of Object.values(source.credentials ?? {})) {
          if ('secret' in credential) names.add(credential.secret);
        }
        break;
      case 'mcp':
        // One credential for an HTTP endpoint (and, beside a per-person one, the listing credential), and the env
        // values of a stdio server.
        if (source.credentials && 'secret' in source.credentials) names.add(source.credentials.secret);
        if (source.listingCredentials && 'secret' in source.listingCredentials) names.add(source.listingCredentials.secret);
        for (const reference of Object.values(source.env ?? {})) names.add(reference.secret);
        break;
    }
  }
  return [...names].sort();
}

export async function createVault(loaded: LoadedConfig, options: CreateVaultOptions = {}): Promise<Vault> {
  const env = options.env ?? process.env;
  const settings = loaded.config.vault ?? {};
  const provider = settings.provider ?? 'file';
  switch (provider) {
    case 'env':
      return createEnvVault({
        prefix: settings.env?.prefix ?? 'GATEWAY_SECRET_',
        env,
        referencedNames: referencedSecretNames(loaded),
      });
    case 'exec':
      return createExecVault({
        command: settings.exec!.command,
        timeoutMs: settings.exec?.timeoutMs ?? 5_000,
        directory: loaded.directory,
        env,
      });
    case 'file': {
      const paths = fileVaultPaths(loaded);
      return createFileVault({
        ...paths,
        keyEnv: settings.file?.keyEnv ?? 'GATEWAY_VAULT_KEY',
        keyEnvRequired: settings.file?.keyEnv !== undefined && settings.file.keyFile === undefined,
        env,
      });
    }
    default: {
      // A provider added to the config schema must be created here before it compiles.
      const unreachable: never = provider;
      throw new GatewayError('INTERNAL_ERROR', `unknown vault provider ${JSON.stringify(unreachable)}`);
    }
  }
}
