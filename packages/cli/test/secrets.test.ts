import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import { runGateway, temporaryDirectory } from '../../../test-support/cli.js';

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
