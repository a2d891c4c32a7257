/**
 * The keys a gateway creates in the vault on its first start (the request-state key, the OAuth signing keys, the
 * receipt log's digest and signing keys), created by three processes starting together on one empty shared vault:
 * the workers of `serve --workers` on one vault file (file vault objects), replicas on the `postgres` vault (vault
 * objects, each with its own pool, on one database). All must end with the same keys: a process signing with
 * a key of its own would have its tokens, retries' requestStates and checkpoints refused by every other one. The
 * same holds for the OAuth signing key's rotation, and a process still running adopts a rotation made by another.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig, type LoadedConfig } from '@gateway/core';
import { createVault, fileVaultPaths, type Vault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../test-support/cli.js';
import { postgresForThisFile } from '../../../test-support/postgres.js';
import {
  loadSigningKeys,
  rotationEntryName,
  SIGNING_KEYS_RELOAD_INTERVAL_MS,
  SIGNING_KEYS_SECRET,
} from '../src/authorization/oauth/signing-keys.js';
import { AccessTokens } from '../src/authorization/oauth/tokens.js';
import type { SessionRecord } from '../src/authorization/stores/sessions.js';
import { testSigningKeySet } from './support/signing-keys.js';
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

const DAY_MS = 86_400_000;
const ISSUER = 'http://127.0.0.1:9/';
const AUDIENCE = 'http://127.0.0.1:9/mcp';
const SESSION = { id: 'session-1', subject: 'alice', clientId: 'client-1', expiresAt: Date.now() + 3_600_000 } as SessionRecord;

/** The kids of the set the vault holds, newest first. */
async function storedKids(vault: Vault): Promise<string[]> {
  return (JSON.parse((await vault.get(SIGNING_KEYS_SECRET))!) as { keys: Array<{ kid: string }> }).keys.map((key) => key.kid);
}

/** `vault`, counting its reads of the signing keys. */
function countingSigningKeyReads(vault: Vault): { vault: Vault; reads: () => number } {
  let reads = 0;
  const counted = new Proxy(vault, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (property !== 'get' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
      return (name: string) => {
        if (name === SIGNING_KEYS_SECRET) reads += 1;
        return (value as Vault['get']).call(target, name);
      };
    },
  });
  return { vault: counted, reads: () => reads };
}

describe.each(['file', 'postgres'] as const)('processes sharing a %s vault when the signing key is due for rotation', (provider) => {
  it('end with one new signing key when they restart together, the one the vault keeps', async () => {
    const { vaults } = await processesOn(provider);
    const first = await loadSigningKeys(vaults[0]!, { maxAgeDays: 90, requireShared: true });
    const later = new Date(Date.now() + 91 * DAY_MS);
    const sets = await Promise.all(vaults.map((vault) => loadSigningKeys(vault, { maxAgeDays: 90, requireShared: true, now: later })));
    expect(new Set(sets.map((set) => set.current.kid)).size).toBe(1);
    const rotated = sets[0]!.current.kid;
    expect(rotated).not.toBe(first.current.kid);
    for (const set of sets) expect(set.jwks()).toEqual(sets[0]!.jwks());
    expect(await storedKids(vaults[2]!)).toEqual([rotated, first.current.kid]);
    // The next rotation forgets the entry this one was decided under, and is decided under its own.
    const again = await loadSigningKeys(vaults[1]!, { maxAgeDays: 90, now: new Date(later.getTime() + 91 * DAY_MS) });
    expect(await storedKids(vaults[0]!)).toEqual([again.current.kid, rotated]);
    expect(await vaults[0]!.get(rotationEntryName(first.current.kid))).toBeUndefined();
    expect(await vaults[0]!.get(rotationEntryName(rotated))).toBeDefined();
    // Replaced at once (the entry deleted, as after a leak): the start that makes the new key deletes the rotation
    // entries too, which hold the old keys.
    await vaults[0]!.delete(SIGNING_KEYS_SECRET);
    const replaced = await loadSigningKeys(vaults[2]!, { maxAgeDays: 90 });
    expect(await storedKids(vaults[1]!)).toEqual([replaced.current.kid]);
    const names = (await vaults[1]!.list()).map((entry) => entry.name);
    expect(names.filter((name) => name.startsWith(rotationEntryName('')))).toEqual([]);
  });

  it('a process that kept running verifies the tokens of one that rotated, and signs with the new key from then on', async () => {
    const { vaults } = await processesOn(provider);
    const running = await loadSigningKeys(vaults[0]!, { maxAgeDays: 90 });
    const restarted = await loadSigningKeys(vaults[1]!, { maxAgeDays: 90, now: new Date(Date.now() + 91 * DAY_MS) });
    expect(restarted.current.kid).not.toBe(running.current.kid);
    const { token } = await new AccessTokens(restarted, ISSUER, AUDIENCE, 600).issue(SESSION);
    const verifier = new AccessTokens(running, ISSUER, AUDIENCE, 600);
    expect(await verifier.verify(token)).toMatchObject({ sid: 'session-1', sub: 'alice' });
    expect(running.current.kid).toBe(restarted.current.kid);
    expect(running.jwks()).toEqual(restarted.jwks());
    // Its own earlier tokens still verify where the rotated set is served: the previous key stays in it.
    const { token: own } = await verifier.issue(SESSION);
    expect(await new AccessTokens(restarted, ISSUER, AUDIENCE, 600).verify(own)).toMatchObject({ sid: 'session-1' });
  });

  it('tokens with kids nobody signed with read the vault at most once per interval', async () => {
    const { vaults } = await processesOn(provider);
    let now = 1_000_000;
    const { vault, reads } = countingSigningKeyReads(vaults[0]!);
    const keys = await loadSigningKeys(vault, { maxAgeDays: 90, clock: () => now });
    const readsAtStart = reads();
    const tokens = new AccessTokens(keys, ISSUER, AUDIENCE, 600);
    const forged = await Promise.all(
      Array.from(
        { length: 5 },
        async () => (await new AccessTokens(await testSigningKeySet(), ISSUER, AUDIENCE, 600).issue(SESSION)).token,
      ),
    );
    const refusals = await Promise.allSettled(forged.map((token) => tokens.verify(token)));
    expect(refusals.map((refusal) => refusal.status)).toEqual(Array(5).fill('rejected'));
    expect(reads() - readsAtStart).toBe(1);
    now += SIGNING_KEYS_RELOAD_INTERVAL_MS - 1;
    await expect(tokens.verify(forged[0]!)).rejects.toThrow('the token was not signed by this gateway');
    expect(reads() - readsAtStart).toBe(1);
    now += 1;
    await expect(tokens.verify(forged[1]!)).rejects.toThrow('the token was not signed by this gateway');
    expect(reads() - readsAtStart).toBe(2);
  });
});

describe('a rotation entry that holds no key set', () => {
  it('stops the rotation with AUTH_SIGNING_KEYS_INVALID and leaves the signing keys as they were', async () => {
    const { vaults } = await processesOn('file');
    const first = await loadSigningKeys(vaults[0]!, { maxAgeDays: 90 });
    const before = await vaults[0]!.get(SIGNING_KEYS_SECRET);
    const later = new Date(Date.now() + 91 * DAY_MS);
    for (const planted of ['not json', '{"keys":[]}']) {
      await vaults[0]!.delete(rotationEntryName(first.current.kid));
      await vaults[0]!.set(rotationEntryName(first.current.kid), planted);
      await expect(loadSigningKeys(vaults[1]!, { maxAgeDays: 90, now: later })).rejects.toMatchObject({
        code: 'AUTH_SIGNING_KEYS_INVALID',
        message: expect.stringContaining(rotationEntryName(first.current.kid)),
      });
      expect(await vaults[0]!.get(SIGNING_KEYS_SECRET)).toBe(before);
    }
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
