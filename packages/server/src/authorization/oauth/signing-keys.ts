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
  current: SigningKey;
  all: SigningKey[];
  /** The JWKS document (RFC 7517 §5), public parts only. */
  jwks(): { keys: JWK[] };
  byKid(kid: string): SigningKey | undefined;
}

async function newStoredKey(now: Date): Promise<StoredKey> {
  const { privateKey } = await generateKeyPair(ACCESS_TOKEN_ALGORITHM, { crv: 'Ed25519', extractable: true });
  const privateJwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint({ kty: privateJwk.kty!, crv: privateJwk.crv!, x: privateJwk.x! });
  return { kid, createdAt: now.toISOString(), privateJwk: { ...privateJwk, kid, alg: ACCESS_TOKEN_ALGORITHM } };
}

function storedKeysOf(text: string): StoredKey[] {
  try {
    const parsed = JSON.parse(text) as { keys?: StoredKey[] };
    return Array.isArray(parsed.keys) ? parsed.keys : [];
  } catch {
    throw new GatewayError(
      'AUTH_SIGNING_KEYS_INVALID',
      `the vault entry '${SIGNING_KEYS_SECRET}' is not a signing key set; delete it to generate a new one`,
    );
  }
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
 * verifies the access tokens it signed, which live minutes); the one before it is dropped.
 */
export async function loadSigningKeys(
  vault: Vault,
  options: { maxAgeDays: number; now?: Date; warn?: (message: string) => void; requireShared?: boolean },
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
        // everyone's. A rotation (or an entry holding no key) replaces the set instead.
        kept = await vault.create(SIGNING_KEYS_SECRET, nextText);
      } else {
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
  const all = await Promise.all(stored.map(toSigningKey));
  const byKid = new Map(all.map((key) => [key.kid, key]));
  return {
    current: all[0]!,
    all,
    jwks: () => ({ keys: all.map((key) => key.publicJwk) }),
    byKid: (kid) => byKid.get(kid),
  };
}
