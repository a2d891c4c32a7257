/**
 * The vault: where secrets live. `createVault` picks the provider from `vault.provider` in gateway.yaml.
 * docs/vault.md documents the providers, key handling, rotation and the exec contract.
 */
import { join } from 'node:path';
import { GatewayError, resolveConfigPath, WRITABLE_VAULT_PROVIDERS, type LoadedConfig, type SettingSource } from '@gateway/core';
import { isPostgresUrl } from '../database-location.js';
import { keyEncryptionKey, type KeyEncryptionKey } from './envelope.js';
import { createEnvVault } from './env-vault.js';
import { createExecVault } from './exec-vault.js';
import { createFileVault, decodeKey } from './file-vault.js';
import { describeSource, readSetting, type SettingContext } from './setting-source.js';
import type { Vault } from './vault.js';

export type { SecretMetadata, Vault } from './vault.js';
export { environmentVariableFor, isVaultReadOnly } from './env-vault.js';

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

/** Whether `set` and `delete` work on this vault (`file`, `postgres`), so the gateway may keep what it creates there. */
export function vaultIsWritable(vault: Pick<Vault, 'provider'>): boolean {
  return WRITABLE_VAULT_PROVIDERS.includes(vault.provider);
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
    case 'postgres': {
      const context = { directory: loaded.directory, env };
      const settings = loaded.config.vault!.postgres!;
      const connectionString = await vaultConnectionString(settings.url, context);
      const keys = await keyEncryptionKeys(settings.key, settings.previousKeys ?? [], context);
      // node-postgres is loaded only by a gateway whose vault is in PostgreSQL.
      const { openPostgresVault } = await import('./postgres-vault.js');
      return openPostgresVault({ connectionString, keys });
    }
    default: {
      // A provider added to the config schema must be created here before it compiles.
      const unreachable: never = provider;
      throw new GatewayError('INTERNAL_ERROR', `unknown vault provider ${JSON.stringify(unreachable)}`);
    }
  }
}

/** The `postgres` vault's connection string, from `vault.postgres.url` (never from the vault it opens). */
async function vaultConnectionString(source: SettingSource, context: SettingContext): Promise<string> {
  const where = describeSource('vault.postgres.url', source, context);
  const value = await readSetting('vault.postgres.url', source, context);
  if (value === undefined) {
    throw new GatewayError('VAULT_DATABASE_URL_MISSING', `${where} gave no connection string for the vault database`);
  }
  if (!isPostgresUrl(value)) {
    throw new GatewayError(
      'VAULT_DATABASE_URL_INVALID',
      `${where} is not a connection string of the form postgres://user:password@host:port/database`,
    );
  }
  return value;
}

/** The key-encryption key, then the previous ones (each base64, 32 bytes; a key file must be 0600). */
async function keyEncryptionKeys(
  current: SettingSource,
  previous: readonly SettingSource[],
  context: SettingContext,
): Promise<[KeyEncryptionKey, ...KeyEncryptionKey[]]> {
  const read = async (setting: string, source: SettingSource): Promise<KeyEncryptionKey> => {
    const where = describeSource(setting, source, context);
    const text = await readSetting(setting, source, context, { privateFile: true });
    if (text === undefined) {
      throw new GatewayError(
        'VAULT_KEY_MISSING',
        `${where} gave no key: the postgres vault needs its key-encryption key (base64, 32 bytes)`,
      );
    }
    return keyEncryptionKey(decodeKey(text, where));
  };
  const first = await read('vault.postgres.key', current);
  const rest: KeyEncryptionKey[] = [];
  for (const [index, source] of previous.entries()) rest.push(await read(`vault.postgres.previousKeys[${index}]`, source));
  return [first, ...rest];
}
