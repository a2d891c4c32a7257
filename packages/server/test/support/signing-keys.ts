import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import { ACCESS_TOKEN_ALGORITHM, type SigningKey, type SigningKeySet } from '../../src/authorization/oauth/signing-keys.js';

/** A one-key Ed25519 signing key set (as the vault would hold), and `drop` to unpublish a key by its kid. */
export async function testSigningKeySet(): Promise<SigningKeySet & { drop(kid: string): void }> {
  const { privateKey, publicKey } = await generateKeyPair(ACCESS_TOKEN_ALGORITHM, { crv: 'Ed25519', extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const key: SigningKey = { kid, createdAt: new Date().toISOString(), privateKey, publicKey, publicJwk: { ...publicJwk, kid } };
  const known = new Map([[kid, key]]);
  return {
    current: key,
    all: [key],
    jwks: () => ({ keys: [...known.values()].map((entry) => entry.publicJwk) }),
    byKid: (wanted) => known.get(wanted),
    // One set, no vault: a kid it does not hold stays unknown.
    reloadFor: async (wanted) => known.get(wanted),
    drop: (wanted) => known.delete(wanted),
  };
}
