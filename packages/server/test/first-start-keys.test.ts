/**
 * The keys a gateway creates in the vault on its first start (the request-state key, the OAuth signing keys, the
 * receipt log's digest and signing keys), created by three processes starting together on one empty shared vault:
 * the workers of `serve --workers` on one vault file (file vault objects), replicas on the `postgres` vault (vault
 * objects, each with its own pool, on one database). All must end with the same keys: a process signing with
 * a key of its own would have its tokens, retries' requestStates and checkpoints refused by every other one.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig, type LoadedConfig } from '@gateway/core';
import { createVault, fileVaultPaths, type Vault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../test-support/cli.js';
import { postgresForThisFile } from '../../../test-support/postgres.js';
import { loadSigningKeys } from '../src/authorization/oauth/signing-keys.js';
import { requestStateKey } from '../src/calls/request-states.js';
import { loadReceiptKeys } from '../src/receipts/keys.js';

const postgres = postgresForThisFile();
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A config whose vault is `vault` (YAML under `vault:`), in a fresh directory; the vault's environment. */
async function configWith(vault: string, env: NodeJS.ProcessEnv): Promise<{ loaded: LoadedConfig; env: NodeJS.ProcessEnv }> {
  const directory = await temporaryDirectory('gateway-first-start-');
  closers.push(() => directory.cleanup());
  const loaded = parseConfig(`gateway:\n  url: http://127.0.0.1:8080\nsources: {}\nvault:\n${vault}`, join(directory.path, 'gateway.yaml'));
  return { loaded, env: { PATH: process.env.PATH, ...env } };
}

/** Three processes' vaults over one empty shared vault, each ready (connected), and the config they load. */
async function processesOn(provider: 'file' | 'postgres'): Promise<{ vaults: Vault[]; loaded: LoadedConfig }> {
  const { loaded, env } =
    provider === 'file'
      ? await configWith('  provider: file\n', {})
      : await configWith('  provider: postgres\n  postgres: { url: { env: VAULT_DB_URL }, key: { env: VAULT_KEK } }\n', {
          VAULT_DB_URL: await postgres.server.createDatabase(),
          VAULT_KEK: Buffer.alloc(32, 7).toString('base64'),
        });
  const open = async (): Promise<Vault> => {
    const vault = await createVault(loaded, { env });
    closers.push(async () => vault.close?.());
    // Started and connected, as a process is by the time it reads its keys: the race is on the keys alone.
    await vault.list();
    return vault;
  };
  return { vaults: [await open(), await open(), await open()], loaded };
}

const quiet = (): void => undefined;

describe.each(['file', 'postgres'] as const)('processes starting together on an empty %s vault', (provider) => {
  it('end with one request-state key', async () => {
    const { vaults } = await processesOn(provider);
    const keys = await Promise.all(vaults.map((vault) => requestStateKey(vault, quiet, { requireShared: true })));
    const texts = keys.map((key) => Buffer.from(key).toString('base64url'));
    expect(new Set(texts).size).toBe(1);
    expect(await vaults[0]!.get('request-state-key')).toBe(texts[0]);
  });

  it('end with one OAuth signing key, the one the vault keeps', async () => {
    const { vaults } = await processesOn(provider);
    const sets = await Promise.all(vaults.map((vault) => loadSigningKeys(vault, { maxAgeDays: 90, requireShared: true })));
    expect(new Set(sets.map((set) => set.current.kid)).size).toBe(1);
    for (const set of sets) expect(set.jwks()).toEqual(sets[0]!.jwks());
    const stored = JSON.parse((await vaults[1]!.get('oauth-signing-keys'))!) as { keys: Array<{ kid: string }> };
    expect(stored.keys.map((key) => key.kid)).toEqual([sets[0]!.current.kid]);
  });

  it("end with one receipt digest key and one receipt signing key, each the vault's", async () => {
    const { vaults, loaded } = await processesOn(provider);
    const loadedKeys = await Promise.all(
      vaults.map((vault) => loadReceiptKeys({ vault, loaded, requiresSharedSigningKey: true, warn: quiet })),
    );
    expect(new Set(loadedKeys.map((keys) => keys.verifierKey)).size).toBe(1);
    expect(new Set(loadedKeys.map((keys) => keys.digestKey.export().toString('base64url'))).size).toBe(1);
    expect(new Set(loadedKeys.map((keys) => keys.journalKey.export().toString('base64url'))).size).toBe(1);
    expect(loadedKeys.every((keys) => keys.isSigningKeyKept && keys.isDigestKeyKept)).toBe(true);
    expect(await vaults[0]!.get('receipts-digest-key')).toBe(loadedKeys[0]!.digestKey.export().toString('base64url'));
  });
});

describe('a vault that fails to store a first-start key for a reason other than being read-only', () => {
  it('stops the start with the vault error, where it used to warn and use a key of this process alone', async () => {
    const { loaded, env } = await configWith('  provider: file\n', {});
    const vault = await createVault(loaded, { env });
    // Another writer holds the vault file's lock (fresh, so not taken over): every write waits its 5 s, then VAULT_BUSY.
    const { path } = fileVaultPaths(loaded);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(`${path}.lock`, '');
    const warnings: string[] = [];
    const warn = (message: string): void => void warnings.push(message);
    const [stateKey, signingKeys, receiptKeys] = await Promise.allSettled([
      requestStateKey(vault, warn),
      loadSigningKeys(vault, { maxAgeDays: 90, warn }),
      loadReceiptKeys({ vault, loaded, requiresSharedSigningKey: false, warn }),
    ]);
    for (const outcome of [stateKey, signingKeys, receiptKeys]) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: 'VAULT_BUSY' });
    }
    expect(warnings).toEqual([]);
    // The read-only vaults keep their warning and a key of the process (docs/server.md).
    const readOnly = await configWith('  provider: env\n', {});
    const envVault = await createVault(readOnly.loaded, { env: readOnly.env });
    expect((await requestStateKey(envVault, warn)).length).toBe(32);
    expect(warnings).toEqual([expect.stringContaining("the env vault has no 'request-state-key' and cannot store one")]);
  }, 20_000);
});
