import { isAbsolute, resolve } from 'node:path';
import { GatewayError } from '@gateway/core';
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
  const [program, ...baseArguments] = options.command;
  const executable = program!.includes('/') && !isAbsolute(program!) ? resolve(options.directory, program!) : program!;
  return {
    provider: 'exec',
    async get(name) {
      // The name becomes an argument: a name starting with '-' could be read as an option, so names are checked.
      checkSecretName(name);
      // Loaded at the first lookup: a gateway on the env or file vault never loads execa (docs/server.md, "Memory").
      const { execa } = await import('execa');
      // Its own process group, so a timeout kills the helper's children too: a grandchild (e.g. `sleep`
      // in a shell script) would otherwise keep stdout open and the call waiting past the timeout.
      const subprocess = execa(executable, [...baseArguments, name], {
        reject: false,
        detached: process.platform !== 'win32',
        stdin: 'ignore',
        stderr: 'ignore',
        maxBuffer: 1024 * 1024,
        env: options.env,
        extendEnv: false,
        windowsHide: true,
      });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup(subprocess.pid, () => subprocess.kill('SIGKILL'));
      }, options.timeoutMs);
      const result = await subprocess.finally(() => clearTimeout(timer));
      if (timedOut) {
        throw failed(name, `did not answer within ${options.timeoutMs} ms`);
      }
      if (result.failed) {
        const reason =
          result.exitCode !== undefined
            ? `exited with code ${result.exitCode}`
            : result.signal
              ? `was killed by ${result.signal}`
              : `could not be started (${(result as { code?: string }).code ?? 'unknown error'})`;
        throw failed(name, reason);
      }
      const value = String(result.stdout).trim();
      return value === '' ? undefined : value;
    },
    async set() {
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

  function failed(name: string, reason: string): GatewayError {
    return new GatewayError('VAULT_EXEC_FAILED', `the vault command ${executable} ${reason} while reading '${name}'`, {
      details: { secret: name },
    });
  }
}

function killGroup(pid: number | undefined, fallback: () => void): void {
  if (pid === undefined || process.platform === 'win32') {
    fallback();
    return;
  }
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    fallback();
  }
}
