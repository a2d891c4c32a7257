import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';
import { postgresForThisFile } from '../../../test-support/postgres.js';

let directory: { path: string; cleanup: () => Promise<void> };
const env = { PATH: process.env.PATH ?? '' };

beforeEach(async () => {
  directory = await temporaryDirectory('gateway-secrets-');
  await writeFile(join(directory.path, 'gateway.yaml'), 'gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n');
});
afterEach(async () => {
  await directory.cleanup();
});

function gateway(args: string[], input = ''): ReturnType<typeof runGateway> {
  return runGateway(args, { cwd: directory.path, input, env });
}

describe('gateway secrets', () => {
  it('set reads the value from stdin and never echoes it; list shows names and metadata only', async () => {
    const canary = `canary-${randomBytes(12).toString('hex')}`;
    const set = await gateway(['secrets', 'set', 'orders-api-key'], `${canary}\n`);
    expect(set.exitCode).toBe(0);
    expect(set.stdout).toContain('stored orders-api-key (version 1)');
    expect(`${set.stdout}${set.stderr}`).not.toContain(canary);

    const list = await gateway(['secrets', 'list']);
    expect(list.exitCode).toBe(0);
    expect(list.stdout).toMatch(/NAME\s+VERSION\s+CREATED\s+UPDATED/);
    expect(list.stdout).toContain('orders-api-key');
    expect(`${list.stdout}${list.stderr}`).not.toContain(canary);

    const json = await gateway(['secrets', 'list', '--json']);
    const parsed = JSON.parse(String(json.stdout)) as { provider: string; secrets: Array<Record<string, unknown>> };
    expect(parsed.provider).toBe('file');
    expect(parsed.secrets).toHaveLength(1);
    expect(Object.keys(parsed.secrets[0]!).sort()).toEqual(['createdAt', 'name', 'updatedAt', 'version']);
    expect(String(json.stdout)).not.toContain(canary);

    const vaultText = await readFile(join(directory.path, '.gateway', 'vault.json'), 'utf8');
    expect(vaultText).not.toContain(canary);
  });

  it('exactly one trailing newline is trimmed from the value, nothing else', async () => {
    await gateway(['secrets', 'set', 'spaced'], '  padded value \n\n');
    const vault = await createVault(await loadConfig(join(directory.path, 'gateway.yaml')), { env });
    expect(await vault.get('spaced')).toBe('  padded value \n');
    const rotate = await gateway(['secrets', 'rotate', 'spaced'], 'second\r\n');
    expect(rotate.exitCode).toBe(0);
    expect(rotate.stdout).toContain('rotated spaced (version 2)');
    expect(await vault.get('spaced')).toBe('second');
  });

  it('an empty value is refused', async () => {
    const result = await gateway(['secrets', 'set', 'empty'], '\n');
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('SECRET_VALUE_EMPTY');
  });

  it('rotate and delete of an unknown name are refused; delete removes a stored one', async () => {
    expect((await gateway(['secrets', 'rotate', 'nope'], 'x')).stderr).toContain('VAULT_SECRET_NOT_FOUND');
    expect((await gateway(['secrets', 'delete', 'nope'])).exitCode).toBe(2);
    await gateway(['secrets', 'set', 'gone'], 'value');
    const deleted = await gateway(['secrets', 'delete', 'gone']);
    expect(deleted.exitCode).toBe(0);
    expect((await gateway(['secrets', 'list', '--json'])).stdout).not.toContain('"gone"');
  });

  it('a key file readable by others is refused with a config error', async () => {
    await gateway(['secrets', 'set', 'token'], 'value');
    await chmod(join(directory.path, '.gateway', 'vault.key'), 0o644);
    const result = await gateway(['secrets', 'set', 'other'], 'value');
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('VAULT_KEY_PERMISSIONS');
  });

  it('the env provider is read-only', async () => {
    await writeFile(join(directory.path, 'gateway.yaml'), 'gateway:\n  url: http://127.0.0.1:8080\nsources: {}\nvault:\n  provider: env\n');
    const result = await gateway(['secrets', 'set', 'token'], 'value');
    expect(result.exitCode).toBe(7);
    expect(result.stderr).toContain('VAULT_READ_ONLY');
  });
});

describe('gateway secrets and doctor on the postgres vault', () => {
  const cluster = postgresForThisFile();
  const key = randomBytes(32).toString('base64');

  async function usePostgresVault(): Promise<Record<string, string>> {
    const url = await cluster.server.createDatabase();
    await writeFile(
      join(directory.path, 'gateway.yaml'),
      'gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n' +
        'vault:\n  provider: postgres\n  postgres:\n    url: { env: VAULT_DB_URL }\n    key: { file: vault-kek }\n',
    );
    await writeFile(join(directory.path, 'vault-kek'), `${key}\n`, { mode: 0o600 });
    return { ...env, VAULT_DB_URL: url };
  }

  it('set stores a value another vault instance reads; list, rotate and delete work; doctor checks the vault', async () => {
    const vaultEnv = await usePostgresVault();
    const run = (args: string[], input = '') => runGateway(args, { cwd: directory.path, input, env: vaultEnv });
    const canary = `canary-${randomBytes(12).toString('hex')}`;
    const set = await run(['secrets', 'set', 'admin-token'], `${canary}\n`);
    expect(set.stderr).toBe('');
    expect(set.exitCode).toBe(0);
    expect(set.stdout).toContain('stored admin-token (version 1)');
    const vault = await createVault(await loadConfig(join(directory.path, 'gateway.yaml')), { env: vaultEnv });
    try {
      expect(vault.provider).toBe('postgres');
      expect(await vault.get('admin-token')).toBe(canary);
      expect((await run(['secrets', 'rotate', 'admin-token'], 'second')).stdout).toContain('rotated admin-token (version 2)');
      expect(await vault.get('admin-token')).toBe('second');
      const list = JSON.parse((await run(['secrets', 'list', '--json'])).stdout) as { provider: string; secrets: Array<{ name: string }> };
      expect(list).toMatchObject({ provider: 'postgres', secrets: [{ name: 'admin-token', version: 2 }] });

      const doctor = JSON.parse((await run(['doctor', '--json'])).stdout) as { findings: Array<Record<string, string>> };
      expect(doctor.findings.find((finding) => finding.check === 'vault')).toMatchObject({ level: 'ok' });
      expect(doctor.findings.find((finding) => finding.check === 'vault')!.message).toMatch(
        /vault provider postgres: 1 secret\(s\) in 127\.0\.0\.1:\d+\/test_/,
      );
      expect(doctor.findings.find((finding) => finding.check === 'admin-token')).toMatchObject({ level: 'ok' });

      expect((await run(['secrets', 'delete', 'admin-token'])).exitCode).toBe(0);
      expect(await vault.get('admin-token')).toBeUndefined();
    } finally {
      await vault.close?.();
    }
  });

  it('a wrong key and an unreachable database are refused with their codes, by secrets and by doctor', async () => {
    const vaultEnv = await usePostgresVault();
    const run = (args: string[], input = '') => runGateway(args, { cwd: directory.path, input, env: vaultEnv });
    expect((await run(['secrets', 'set', 'admin-token'], 'value')).exitCode).toBe(0);
    await writeFile(join(directory.path, 'vault-kek'), `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    const doctor = JSON.parse((await run(['doctor', '--json'])).stdout) as { findings: Array<Record<string, string>> };
    expect(doctor.findings.find((finding) => finding.check === 'vault')).toMatchObject({ level: 'error', code: 'VAULT_KEY_INVALID' });
    expect(doctor.findings.find((finding) => finding.check === 'admin-token')).toMatchObject({ level: 'error', code: 'VAULT_KEY_INVALID' });
    const set = await run(['secrets', 'set', 'other'], 'value');
    expect(set.exitCode).toBe(3);
    expect(set.stderr).toContain('VAULT_KEY_INVALID');

    const password = new URL(vaultEnv.VAULT_DB_URL!).password;
    const unreachable = { ...vaultEnv, VAULT_DB_URL: vaultEnv.VAULT_DB_URL!.replace(/:\d+\//, ':1/') };
    const list = await runGateway(['secrets', 'list'], { cwd: directory.path, env: unreachable });
    expect(list.exitCode).not.toBe(0);
    expect(list.stderr).toContain('VAULT_DATABASE_UNREACHABLE');
    expect(list.stderr).toContain('127.0.0.1:1/test_');
    expect(list.stderr).not.toContain(password);
  });
});
