/**
 * Envelope encryption of one secret (the `postgres` vault's rows):
 *
 * - a fresh random 256-bit data key per value, which seals the value with AES-256-GCM under a random 96-bit nonce;
 * - the data key wrapped (AES-256-GCM, its own random nonce) by the key-encryption key, which is in no database;
 * - the secret's name is the additional authenticated data of both, so a row copied or renamed to another name
 *   does not open; the wrap also binds the key id, so a row whose key id was edited does not open either;
 * - the key id is derived from the key-encryption key (an HMAC of a constant: it says which key, never the key),
 *   so a reader finds the key a row was sealed under among the current and previous keys, and keys can rotate.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { GatewayError } from '@gateway/core';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export interface KeyEncryptionKey {
  /** Derived from the key: `kek-` and 16 base64url characters. */
  id: string;
  key: Buffer;
}

/** One sealed value as stored: each part is nonce ‖ ciphertext ‖ tag. */
export interface Envelope {
  keyId: string;
  wrappedKey: Buffer;
  sealedValue: Buffer;
}

export function keyEncryptionKey(key: Buffer): KeyEncryptionKey {
  const id = createHmac('sha256', key).update('gateway-vault/v1/key-id').digest('base64url').slice(0, 16);
  return { id: `kek-${id}`, key };
}

function valueAad(name: string): Buffer {
  return Buffer.from(`gateway-vault/envelope/v1/value/${name}`, 'utf8');
}

function dataKeyAad(name: string, keyId: string): Buffer {
  return Buffer.from(`gateway-vault/envelope/v1/data-key/${keyId}/${name}`, 'utf8');
}

function seal(key: Buffer, plaintext: Buffer, aad: Buffer): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([nonce, ciphertext, cipher.getAuthTag()]);
}

/** The plaintext, or undefined when the key is wrong or the bytes or their associated data were altered. */
function unseal(key: Buffer, sealed: Buffer, aad: Buffer): Buffer | undefined {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE_BYTES));
    decipher.setAAD(aad);
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    return undefined;
  }
}

export function sealEnvelope(kek: KeyEncryptionKey, name: string, value: string): Envelope {
  const dataKey = randomBytes(32);
  try {
    return {
      keyId: kek.id,
      wrappedKey: seal(kek.key, dataKey, dataKeyAad(name, kek.id)),
      sealedValue: seal(dataKey, Buffer.from(value, 'utf8'), valueAad(name)),
    };
  } finally {
    dataKey.fill(0);
  }
}

/**
 * Opens the envelope stored under `name` with whichever of `keys` sealed it. A key id none of them has is
 * VAULT_KEY_INVALID (the configured key does not open this secret); a known key that does not open it is
 * VAULT_SECRET_ALTERED (the row was edited, or moved from another name). Neither message carries a value.
 */
export function openEnvelope(keys: readonly KeyEncryptionKey[], name: string, envelope: Envelope): string {
  const kek = keys.find((candidate) => candidate.id === envelope.keyId);
  if (!kek) {
    throw new GatewayError(
      'VAULT_KEY_INVALID',
      `the vault key does not open the secret '${name}': it was sealed under ${envelope.keyId}, and the configured keys are ` +
        `${keys.map((candidate) => candidate.id).join(', ')}; ` +
        'set vault.postgres.key to that key, or list it under vault.postgres.previousKeys',
      { details: { secret: name, keyId: envelope.keyId } },
    );
  }
  const dataKey = unseal(kek.key, envelope.wrappedKey, dataKeyAad(name, kek.id));
  const value = dataKey === undefined ? undefined : unseal(dataKey, envelope.sealedValue, valueAad(name));
  dataKey?.fill(0);
  if (value === undefined) {
    throw new GatewayError(
      'VAULT_SECRET_ALTERED',
      `the secret '${name}' does not open under its key ${kek.id}: its row was altered, or moved from another secret's name`,
      { details: { secret: name, keyId: kek.id } },
    );
  }
  return value.toString('utf8');
}
