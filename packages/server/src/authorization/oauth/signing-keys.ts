import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { GatewayError } from '@gateway/core';
import { isVaultReadOnly, type Vault } from '@gateway/runtime';

/** The vault entry holding the authorization server's signing keys (never the database). */
export const SIGNING_KEYS_SECRET = 'oauth-signing-keys';

/** Ed25519 (RFC 8037): small keys, deterministic signatures, no parameter choices to get wrong. */
export const ACCESS_TOKEN_ALGORITHM = 'EdDSA';

interface StoredKey {
  kid: string;
  createdAt: string;
  privateJwk: JWK;
}

export interface SigningKey {
  kid: string;
  createdAt: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
}

/** The current key signs; the previous one (kept after a rotation) only verifies tokens it signed earlier. */
export interface SigningKeySet {
  readonly current: SigningKey;
  readonly all: SigningKey[];
  /** The JWKS document (RFC 7517 §5), public parts only. */
  jwks(): { keys: JWK[] };
  byKid(kid: string): SigningKey | undefined;
  /**
   * A key this process does not know: another process sharing the vault may have rotated since this one read
   * it (a replica restarted after the key's maximum age). Reads the vault's set again, at most once per
   * SIGNING_KEYS_RELOAD_INTERVAL_MS whatever kids are asked for, and when it holds `kid` adopts it: that key
   * verifies, and the set's newest key signs from then on, as in the process that rotated.
   */
  reloadFor(kid: string): Promise<SigningKey | undefined>;
}

/**
 * The least time between two reads of the vault for unknown kids: a token with a made-up kid costs no more than
 * one vault read per interval, however many are sent.
 */
export const SIGNING_KEYS_RELOAD_INTERVAL_MS = 10_000;

/**
 * The vault entry a rotation of the key `kid` is first stored under. `Vault.create` is atomic across every
 * process sharing the vault, so when several start together with the key due, the set stored first is
 * everyone's, as on a first start; then it replaces SIGNING_KEYS_SECRET.
 */
export function rotationEntryName(kid: string): string {
  return `${SIGNING_KEYS_SECRET}.after.${kid}`;
}

async function newStoredKey(now: Date): Promise<StoredKey> {
  const { privateKey } = await generateKeyPair(ACCESS_TOKEN_ALGORITHM, { crv: 'Ed25519', extractable: true });
  const privateJwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint({ kty: privateJwk.kty!, crv: privateJwk.crv!, x: privateJwk.x! });
  return { kid, createdAt: now.toISOString(), privateJwk: { ...privateJwk, kid, alg: ACCESS_TOKEN_ALGORITHM } };
}

function storedKeysOf(text: string, entry = SIGNING_KEYS_SECRET): StoredKey[] {
  try {
    const parsed = JSON.parse(text) as { keys?: StoredKey[] };
    return Array.isArray(parsed.keys) ? parsed.keys : [];
  } catch {
    throw invalidKeySet(entry);
  }
}

function invalidKeySet(entry: string): GatewayError {
  return new GatewayError(
    'AUTH_SIGNING_KEYS_INVALID',
    `the vault entry '${entry}' is not a signing key set; delete it to generate a new one`,
  );
}

async function toSigningKey(stored: StoredKey): Promise<SigningKey> {
  const publicJwk: JWK = {
    kty: stored.privateJwk.kty,
    crv: stored.privateJwk.crv,
    x: stored.privateJwk.x,
    kid: stored.kid,
    alg: ACCESS_TOKEN_ALGORITHM,
    use: 'sig',
  };
  return {
    kid: stored.kid,
    createdAt: stored.createdAt,
    privateKey: (await importJWK(stored.privateJwk, ACCESS_TOKEN_ALGORITHM)) as CryptoKey,
    publicKey: (await importJWK(publicJwk, ACCESS_TOKEN_ALGORITHM)) as CryptoKey,
    publicJwk,
  };
}

/**
 * Loads the signing keys from the vault, generating the first one on first start and rotating when the
 * current key is older than `maxAgeDays`. After a rotation the previous key stays in the JWKS (it
 * verifies the access tokens it signed, which live minutes); the one before it is dropped. Processes sharing
 * the vault agree on both: the first key and each rotation are created only if absent (`Vault.create`).
 */
export async function loadSigningKeys(
  vault: Vault,
  options: {
    maxAgeDays: number;
    now?: Date;
    warn?: (message: string) => void;
    requireShared?: boolean;
    /** The clock of the reloads for unknown kids (tests); Date.now otherwise. */
    clock?: () => number;
  },
): Promise<SigningKeySet> {
  const now = options.now ?? new Date();
  const text = await vault.get(SIGNING_KEYS_SECRET);
  let stored: StoredKey[] = text === undefined ? [] : storedKeysOf(text);
  const newest = stored[0];
  const isDue = newest === undefined || now.getTime() - Date.parse(newest.createdAt) > options.maxAgeDays * 86_400_000;
  /** What the vault holds once this process has written: its own set, or on first start the one stored first. */
  let kept: string | undefined;
  if (isDue) {
    const next = [await newStoredKey(now), ...stored.slice(0, 1)];
    const nextText = JSON.stringify({ keys: next });
    try {
      if (text === undefined) {
        // First start: processes starting together on an empty vault each generate a key; the set stored first is
        // everyone's. The rotation entries of a set deleted to replace it at once go with it (they hold its keys).
        kept = await vault.create(SIGNING_KEYS_SECRET, nextText);
        await forgetRotationEntries(vault);
      } else if (newest !== undefined) {
        // A rotation: likewise the set stored first under this key's rotation entry is everyone's.
        const entry = rotationEntryName(newest.kid);
        kept = await vault.create(entry, nextText);
        // What another process stored there becomes everyone's set: checked before it replaces the entry.
        if (storedKeysOf(kept, entry).length === 0) throw invalidKeySet(entry);
        await vault.set(SIGNING_KEYS_SECRET, kept);
        await forgetRotationEntry(vault, stored[1]?.kid);
      } else {
        // An entry holding no key: replaced.
        await vault.set(SIGNING_KEYS_SECRET, nextText);
        kept = nextText;
      }
    } catch (error) {
      if (!isVaultReadOnly(error)) throw error;
      if (newest === undefined && options.requireShared) {
        // Several processes (`gateway serve --workers N`, replicas on PostgreSQL) must sign and verify with the
        // same key: a key of this process alone would make every other one refuse the tokens it issues.
        throw new GatewayError(
          'WORKERS_SIGNING_KEYS_NOT_SHARED',
          `processes that serve together (--workers, or replicas on PostgreSQL) need the signing keys in ` +
            `the vault, but the ${vault.provider} vault has no '${SIGNING_KEYS_SECRET}' and cannot store one: ` +
            `use a writable vault they share (file for --workers, postgres for replicas), or provide '${SIGNING_KEYS_SECRET}' ` +
            '(docs/authorization.md › Signing keys)',
        );
      }
      if (newest === undefined) {
        // A read-only vault (env, exec) without the entry: sign with a key that lives as long as this process.
        // Sessions and refresh tokens are in the database, so after a restart clients simply refresh; several
        // replicas, though, need the shared entry (docs/authorization.md › Signing keys).
        options.warn?.(
          `the ${vault.provider} vault has no '${SIGNING_KEYS_SECRET}' and cannot store one: access tokens are signed with a key ` +
            'that lasts until this process stops (clients refresh after a restart)',
        );
        stored = next;
      } else {
        options.warn?.(`signing key ${newest.kid} is due for rotation but the ${vault.provider} vault is read-only; keeping it`);
      }
    }
  }
  if (kept !== undefined) stored = storedKeysOf(kept);
  return liveKeySet(vault, await Promise.all(stored.map(toSigningKey)), options.clock ?? Date.now);
}

/** The rotation entry of the key rotated the time before, once the set it made is itself rotated (best effort). */
async function forgetRotationEntry(vault: Vault, previousKid: string | undefined): Promise<void> {
  if (previousKid === undefined) return;
  await vault.delete(rotationEntryName(previousKid)).catch(() => false);
}

/** Every rotation entry, when the set they rotated is gone (best effort). */
async function forgetRotationEntries(vault: Vault): Promise<void> {
  const prefix = rotationEntryName('');
  const entries = await vault.list().catch(() => []);
  for (const { name } of entries) if (name.startsWith(prefix)) await vault.delete(name).catch(() => false);
}

/** The key set a process serves with: `keys` as read at start, replaced by the vault's when it holds a kid asked for. */
function liveKeySet(vault: Vault, keys: SigningKey[], clock: () => number): SigningKeySet {
  let all = keys;
  let byKid = new Map(all.map((key) => [key.kid, key]));
  let lastReloadAt = Number.NEGATIVE_INFINITY;
  let reloading: Promise<void> | undefined;

  async function reload(): Promise<void> {
    lastReloadAt = clock();
    const text = await vault.get(SIGNING_KEYS_SECRET);
    if (text === undefined) return;
    const fresh = await Promise.all(storedKeysOf(text).map(toSigningKey));
    if (fresh.length === 0) return;
    all = fresh;
    byKid = new Map(all.map((key) => [key.kid, key]));
  }

  return {
    get current() {
      return all[0]!;
    },
    get all() {
      return all;
    },
    jwks: () => ({ keys: all.map((key) => key.publicJwk) }),
    byKid: (kid) => byKid.get(kid),
    async reloadFor(kid) {
      const known = byKid.get(kid);
      if (known) return known;
      if (!reloading && clock() - lastReloadAt >= SIGNING_KEYS_RELOAD_INTERVAL_MS) {
        reloading = reload()
          .catch(() => undefined)
          .finally(() => {
            reloading = undefined;
          });
      }
      if (reloading) await reloading;
      return byKid.get(kid);
    },
  };
}
