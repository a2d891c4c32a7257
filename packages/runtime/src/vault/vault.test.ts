import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig, type LoadedConfig } from '@gateway/core';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { createVault, fileVaultPaths, referencedSecretNames } from './index.js';

let directory: { path: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  directory = await temporaryDirectory('gateway-vault-');
});
afterEach(async () => {
  await directory.cleanup();
});

function configWith(extra: string): LoadedConfig {
  return parseConfig(`gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n${extra}`, join(directory.path, 'gateway.yaml'));
}

const noKeyEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH };

describe('file vault', () => {
  it('set, get, rotate and delete round-trip, with metadata and version', async () => {
    const loaded = configWith('');
    const vault = await createVault(loaded, { env: noKeyEnv });
    expect(await vault.get('api-key')).toBeUndefined();
    const first = await vault.set('api-key', 'first-value');
    expect(first).toMatchObject({ name: 'api-key', version: 1 });
    expect(await vault.get('api-key')).toBe('first-value');
    const rotated = await vault.set('api-key', 'second-value');
    expect(rotated.version).toBe(2);
    expect(rotated.createdAt).toBe(first.createdAt);
    expect(await vault.get('api-key')).toBe('second-value');
    await vault.set('other', 'x');
    expect((await vault.list()).map((entry) => [entry.name, entry.version])).toEqual([
      ['api-key', 2],
      ['other', 1],
    ]);
    expect(await vault.delete('api-key')).toBe(true);
    expect(await vault.delete('api-key')).toBe(false);
    expect(await vault.get('api-key')).toBeUndefined();
  });

  it('the vault file never contains a plaintext value and both files are 0600', async () => {
    const loaded = configWith('');
    const vault = await createVault(loaded, { env: noKeyEnv });
    const canary = `canary-${randomBytes(8).toString('hex')}`;
    await vault.set('canary', canary);
    const { path, keyFile } = fileVaultPaths(loaded);
    const text = await readFile(path, 'utf8');
    expect(text).not.toContain(canary);
    expect(text).not.toContain(Buffer.from(canary).toString('base64'));
    expect(JSON.parse(text).secrets.canary).toMatchObject({ version: 1 });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
  });

  it('a second process (a new vault object) sees a rotation on its next read', async () => {
    const loaded = configWith('');
    const writer = await createVault(loaded, { env: noKeyEnv });
    const reader = await createVault(loaded, { env: noKeyEnv });
    await writer.set('token', 'one');
    expect(await reader.get('token')).toBe('one');
    await writer.set('token', 'two');
    expect(await reader.get('token')).toBe('two');
  });

  it('a wrong key is refused with VAULT_KEY_INVALID, for reads and for writes', async () => {
    const loaded = configWith('');
    const right = randomBytes(32).toString('base64');
    const wrong = randomBytes(32).toString('base64');
    await (await createVault(loaded, { env: { GATEWAY_VAULT_KEY: right } })).set('token', 'value');
    const intruder = await createVault(loaded, { env: { GATEWAY_VAULT_KEY: wrong } });
    await expect(intruder.get('token')).rejects.toMatchObject({ code: 'VAULT_KEY_INVALID' });
    await expect(intruder.set('new', 'value')).rejects.toMatchObject({ code: 'VAULT_KEY_INVALID' });
    expect(await (await createVault(loaded, { env: { GATEWAY_VAULT_KEY: right } })).get('token')).toBe('value');
  });

  it('a malformed key is refused', async () => {
    const vault = await createVault(configWith(''), { env: { GATEWAY_VAULT_KEY: 'c2hvcnQ=' } });
    await expect(vault.set('token', 'value')).rejects.toMatchObject({ code: 'VAULT_KEY_INVALID' });
  });

  it('a key file readable by others (0644) is refused', async () => {
    const loaded = configWith('');
    const vault = await createVault(loaded, { env: noKeyEnv });
    await vault.set('token', 'value');
    const { keyFile } = fileVaultPaths(loaded);
    await chmod(keyFile, 0o644);
    const reopened = await createVault(loaded, { env: noKeyEnv });
    await expect(reopened.get('token')).rejects.toMatchObject({ code: 'VAULT_KEY_PERMISSIONS' });
  });

  it('a ciphertext moved under another name does not open (names are bound as authenticated data)', async () => {
    const loaded = configWith('');
    const vault = await createVault(loaded, { env: noKeyEnv });
    await vault.set('a', 'value-a');
    await vault.set('b', 'value-b');
    const { path } = fileVaultPaths(loaded);
    const document = JSON.parse(await readFile(path, 'utf8'));
    document.secrets.b = { ...document.secrets.a, version: 9 };
    await writeFile(path, JSON.stringify(document), { mode: 0o600 });
    const reopened = await createVault(loaded, { env: noKeyEnv });
    expect(await reopened.get('a')).toBe('value-a');
    await expect(reopened.get('b')).rejects.toMatchObject({ code: 'VAULT_KEY_INVALID' });
  });

  it('a lost key file with secrets stored is reported, not silently replaced', async () => {
    const loaded = configWith('');
    await (await createVault(loaded, { env: noKeyEnv })).set('token', 'value');
    const { keyFile } = fileVaultPaths(loaded);
    await writeFile(keyFile, '');
    const { unlink } = await import('node:fs/promises');
    await unlink(keyFile);
    const reopened = await createVault(loaded, { env: noKeyEnv });
    await expect(reopened.get('token')).rejects.toMatchObject({ code: 'VAULT_KEY_MISSING' });
    await expect(reopened.set('other', 'value')).rejects.toMatchObject({ code: 'VAULT_KEY_MISSING' });
  });

  it('configured paths and an explicit key variable are honoured', async () => {
    const key = randomBytes(32).toString('base64');
    const loaded = configWith('vault:\n  file:\n    path: secrets/v.json\n    keyEnv: MY_KEY\n');
    const vault = await createVault(loaded, { env: { MY_KEY: key } });
    await vault.set('x', 'y');
    expect(fileVaultPaths(loaded).path).toBe(join(directory.path, 'secrets', 'v.json'));
    await expect(stat(join(directory.path, 'secrets', 'v.json'))).resolves.toBeTruthy();
    const withoutVariable = await createVault(loaded, { env: {} });
    await expect(withoutVariable.get('x')).rejects.toMatchObject({ code: 'VAULT_KEY_MISSING' });
  });

  it('empty values and invalid names are refused', async () => {
    const vault = await createVault(configWith(''), { env: noKeyEnv });
    await expect(vault.set('token', '')).rejects.toMatchObject({ code: 'VAULT_SECRET_EMPTY' });
    await expect(vault.set('-rf', 'x')).rejects.toMatchObject({ code: 'VAULT_SECRET_NAME_INVALID' });
  });

  it('concurrent writers do not lose updates', async () => {
    const loaded = configWith('');
    await (await createVault(loaded, { env: noKeyEnv })).set('seed', 'x');
    await Promise.all(
      Array.from({ length: 8 }, async (_, index) => (await createVault(loaded, { env: noKeyEnv })).set(`name-${index}`, `v${index}`)),
    );
    expect((await (await createVault(loaded, { env: noKeyEnv })).list()).length).toBe(9);
  });
});

describe('create-if-absent (the keys a gateway creates on first start)', () => {
  it('file: concurrent creates of one name by two vault objects on one file all return the value stored first', async () => {
    const loaded = configWith('');
    // Two processes on one vault file (the workers of `serve --workers`), on a vault with no key file yet.
    const vaults = [await createVault(loaded, { env: noKeyEnv }), await createVault(loaded, { env: noKeyEnv })];
    const created = await Promise.all(
      Array.from({ length: 8 }, (_, index) => vaults[index % 2]!.create('first-start-key', `value-${index}`)),
    );
    expect(new Set(created).size).toBe(1);
    expect(created[0]).toMatch(/^value-\d$/);
    for (const vault of [...vaults, await createVault(loaded, { env: noKeyEnv })])
      expect(await vault.get('first-start-key')).toBe(created[0]);
    expect((await vaults[0]!.list()).find((entry) => entry.name === 'first-start-key')?.version).toBe(1);
  });

  it('file: create leaves a stored value as it is and returns it; set still replaces', async () => {
    const vault = await createVault(configWith(''), { env: noKeyEnv });
    await vault.set('kept', 'stored-before');
    expect(await vault.create('kept', 'newer')).toBe('stored-before');
    expect(await vault.get('kept')).toBe('stored-before');
    await expect(vault.create('token', '')).rejects.toMatchObject({ code: 'VAULT_SECRET_EMPTY' });
    await expect(vault.create('-rf', 'x')).rejects.toMatchObject({ code: 'VAULT_SECRET_NAME_INVALID' });
  });

  it('env and exec: create is refused as read-only, like set', async () => {
    const env = await createVault(configWith('vault:\n  provider: env\n'), { env: {} });
    await expect(env.create('x', 'y')).rejects.toMatchObject({ code: 'VAULT_READ_ONLY' });
    const exec = await createVault(configWith('vault:\n  provider: exec\n  exec:\n    command: [/bin/true]\n'), { env: noKeyEnv });
    await expect(exec.create('x', 'y')).rejects.toMatchObject({ code: 'VAULT_READ_ONLY' });
  });
});

describe('env vault', () => {
  it('reads GATEWAY_SECRET_<NAME> and is read-only', async () => {
    const loaded = configWith('vault:\n  provider: env\n');
    const vault = await createVault(loaded, { env: { GATEWAY_SECRET_ORDERS_API_KEY: 'from-env', GATEWAY_SECRET_ADMIN_TOKEN: 't' } });
    expect(vault.provider).toBe('env');
    expect(await vault.get('orders-api.key')).toBe('from-env');
    expect(await vault.get('missing')).toBeUndefined();
    await expect(vault.set('x', 'y')).rejects.toMatchObject({ code: 'VAULT_READ_ONLY' });
    await expect(vault.delete('x')).rejects.toMatchObject({ code: 'VAULT_READ_ONLY' });
    expect((await vault.list()).map((entry) => entry.name)).toEqual(['admin-token']);
  });

  it('honours a custom prefix', async () => {
    const vault = await createVault(configWith('vault:\n  provider: env\n  env:\n    prefix: APP_\n'), { env: { APP_TOKEN: 'v' } });
    expect(await vault.get('token')).toBe('v');
  });
});

describe('exec vault', () => {
  async function script(body: string): Promise<string> {
    const path = join(directory.path, 'secret-helper.sh');
    await writeFile(path, `#!/bin/sh\n${body}\n`, { mode: 0o700 });
    return path;
  }

  it('runs the command with the secret name appended and trims its output', async () => {
    await script('if [ "$1" = "--field" ] && [ "$2" = "api-key" ]; then printf "  s3cret-value \\n\\n"; fi');
    const vault = await createVault(configWith('vault:\n  provider: exec\n  exec:\n    command: [./secret-helper.sh, --field]\n'), {
      env: noKeyEnv,
    });
    expect(await vault.get('api-key')).toBe('s3cret-value');
    expect(await vault.get('unknown')).toBeUndefined();
    await expect(vault.set('x', 'y')).rejects.toMatchObject({ code: 'VAULT_READ_ONLY' });
  });

  it('a non-zero exit is VAULT_EXEC_FAILED and the output never appears in the error', async () => {
    await script('echo "leaked-secret-output"; echo "leaked-stderr" >&2; exit 3');
    const vault = await createVault(configWith('vault:\n  provider: exec\n  exec:\n    command: [./secret-helper.sh]\n'), {
      env: noKeyEnv,
    });
    const error = await vault.get('api-key').catch((caught: unknown) => caught as Error);
    expect(error).toMatchObject({ code: 'VAULT_EXEC_FAILED' });
    expect((error as Error).message).toContain('exited with code 3');
    expect(JSON.stringify(error)).not.toContain('leaked');
    expect((error as Error).message).not.toContain('leaked');
  });

  it('a command that does not answer in time is killed and reported', async () => {
    await script('sleep 5; echo late');
    const vault = await createVault(
      configWith('vault:\n  provider: exec\n  exec:\n    command: [./secret-helper.sh]\n    timeoutMs: 200\n'),
      { env: noKeyEnv },
    );
    const started = Date.now();
    await expect(vault.get('api-key')).rejects.toMatchObject({ code: 'VAULT_EXEC_FAILED', message: expect.stringContaining('200 ms') });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('a command that cannot be started is reported', async () => {
    const vault = await createVault(configWith('vault:\n  provider: exec\n  exec:\n    command: [./does-not-exist]\n'), { env: noKeyEnv });
    await expect(vault.get('api-key')).rejects.toMatchObject({ code: 'VAULT_EXEC_FAILED' });
  });
});

describe('referenced secret names', () => {
  it("an MCP source's per-person credential names its client secret and its listing credential's secret", () => {
    const loaded = parseConfig(
      'gateway:\n  url: http://127.0.0.1:8080\nsources:\n  tracker:\n    kind: mcp\n    url: https://mcp.example.com/mcp\n' +
        '    credentials: { type: oauthPerson, issuer: https://id.example.com, clientId: c, secret: tracker-client-secret }\n' +
        '    listingCredentials: { type: bearer, secret: tracker-listing-token }\n',
      join(directory.path, 'gateway.yaml'),
    );
    expect(referencedSecretNames(loaded)).toEqual(['admin-token', 'tracker-client-secret', 'tracker-listing-token']);
  });
});
