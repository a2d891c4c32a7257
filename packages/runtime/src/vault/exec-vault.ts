import { GatewayError } from '@gateway/core';
import { commandProgram, runSecretCommand } from './command.js';
import { readOnly } from './env-vault.js';
import { checkSecretName } from './file-vault.js';
import type { Vault } from './vault.js';

export interface ExecVaultOptions {
  /** argv of the command; the secret name is appended as the last argument. */
  command: readonly string[];
  timeoutMs: number;
  /** Directory a relative command path (one containing '/') is resolved against: the config's. */
  directory: string;
  env: NodeJS.ProcessEnv;
}

/**
 * Secrets printed by a command: how a real secret manager's CLI plugs in (e.g. a wrapper around
 * `vault kv get -field=value`, `op read`, `aws secretsmanager get-secret-value`).
 * Contract: exit 0 and the value on stdout (surrounding whitespace trimmed); exit 0 with nothing printed
 * means "no such secret"; any other exit, or no answer within the timeout, is VAULT_EXEC_FAILED.
 * Neither stdout nor stderr ever reaches an error message or a log: either may hold the secret.
 */
export function createExecVault(options: ExecVaultOptions): Vault {
  const command = { argv: options.command, directory: options.directory, timeoutMs: options.timeoutMs, env: options.env };
  const executable = commandProgram(command);
  return {
    provider: 'exec',
    async get(name) {
      // The name becomes an argument: a name starting with '-' could be read as an option, so names are checked.
      checkSecretName(name);
      const outcome = await runSecretCommand(command, [name]);
      if ('failure' in outcome) {
        throw new GatewayError('VAULT_EXEC_FAILED', `the vault command ${executable} ${outcome.failure} while reading '${name}'`, {
          details: { secret: name },
        });
      }
      return outcome.stdout === '' ? undefined : outcome.stdout;
    },
    async set() {
      throw readOnly('exec');
    },
    async create() {
      throw readOnly('exec');
    },
    async delete() {
      throw readOnly('exec');
    },
    async list() {
      throw new GatewayError(
        'VAULT_LIST_UNSUPPORTED',
        'the exec vault provider cannot list secrets: list them with the secret manager itself',
      );
    },
  };
}
