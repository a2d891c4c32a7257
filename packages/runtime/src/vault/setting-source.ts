/**
 * Settings the vault needs before it can open (the `postgres` vault's connection string and key-encryption key):
 * they cannot come from the vault itself, so each is read from an environment variable, a file or a command.
 */
import { readFile, stat } from 'node:fs/promises';
import { GatewayError, type SettingSource } from '@gateway/core';
import { isAbsolute, resolve } from 'node:path';
import { commandProgram, runSecretCommand } from './command.js';

export interface SettingContext {
  /** The config's directory: relative files and programs resolve against it. */
  directory: string;
  env: NodeJS.ProcessEnv;
}

/** How messages name a setting and where it comes from, never its value (`vault.postgres.key (the environment variable K)`). */
export function describeSource(setting: string, source: SettingSource, context: SettingContext): string {
  if ('env' in source) return `${setting} (the environment variable ${source.env})`;
  if ('file' in source) return `${setting} (the file ${resolvePath(source.file, context)})`;
  return `${setting} (the command ${commandProgram({ argv: source.exec, directory: context.directory })})`;
}

function resolvePath(path: string, context: SettingContext): string {
  return isAbsolute(path) ? path : resolve(context.directory, path);
}

/**
 * The setting's value, surrounding whitespace trimmed; undefined when the variable is unset or empty, the file does
 * not exist, or the command printed nothing. A failing command is VAULT_EXEC_FAILED; a key file others can read is
 * VAULT_KEY_PERMISSIONS when `privateFile` (like ssh refuses a readable private key).
 */
export async function readSetting(
  setting: string,
  source: SettingSource,
  context: SettingContext,
  options: { privateFile?: boolean } = {},
): Promise<string | undefined> {
  if ('env' in source) {
    const value = context.env[source.env]?.trim();
    return value ? value : undefined;
  }
  if ('file' in source) {
    const path = resolvePath(source.file, context);
    let mode: number;
    try {
      const info = await stat(path);
      if (!info.isFile()) throw new GatewayError('CONFIG_INVALID', `${describeSource(setting, source, context)} is not a regular file`);
      mode = info.mode;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    if (options.privateFile && process.platform !== 'win32' && (mode & 0o077) !== 0) {
      throw new GatewayError(
        'VAULT_KEY_PERMISSIONS',
        `${describeSource(setting, source, context)} is readable by others (mode ${(mode & 0o777).toString(8)}); run chmod 600 on it`,
      );
    }
    const value = (await readFile(path, 'utf8')).trim();
    return value ? value : undefined;
  }
  const outcome = await runSecretCommand({
    argv: source.exec,
    directory: context.directory,
    timeoutMs: source.timeoutMs ?? 5_000,
    env: context.env,
  });
  if ('failure' in outcome) {
    throw new GatewayError('VAULT_EXEC_FAILED', `${describeSource(setting, source, context)} ${outcome.failure}`, {
      details: { setting },
    });
  }
  return outcome.stdout === '' ? undefined : outcome.stdout;
}
