/**
 * The receipt log's keys, from the vault (created there on first start): the digest key (keyed digests of
 * arguments and results, and, derived from it, the journal's line key) and the Ed25519 checkpoint signing key.
 */
import { createSecretKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import {
  GatewayError,
  parseVerifierKey,
  privateKeyFromPem,
  RECEIPTS_SIGNING_KEY_SECRET,
  rawPublicKey,
  receiptOrigin,
  trustedReceiptKeys,
  verifierKey,
  type LoadedConfig,
} from '@gateway/core';
import { isVaultReadOnly, type Vault } from '@gateway/runtime';
import { journalKeyFrom } from './journal.js';

/** Vault entries of the receipt log (created on first start when the vault can store them). */
export const RECEIPTS_DIGEST_KEY_SECRET = 'receipts-digest-key';
export { RECEIPTS_SIGNING_KEY_SECRET };

export interface ReceiptKeys {
  /** The checkpoint origin line, also the signed-note key name. */
  origin: string;
  digestKey: KeyObject;
  /** Whether the vault keeps the digest key (a journal needs it: its lines are authenticated with a key from it). */
  isDigestKeyKept: boolean;
  journalKey: KeyObject;
  signingKey: KeyObject;
  /** Whether the vault keeps the signing key (otherwise it lasts as long as this process). */
  isSigningKeyKept: boolean;
  /** The C2SP verifier key of the signing key (public). */
  verifierKey: string;
  /** This key and `receipts.trustedKeys`, never a key from the database. */
  trustedKeys: string[];
}

/**
 * A secret from the vault, created there on first start, saying whether the vault keeps it. A read-only vault
 * (env, exec) without the entry gets a key that lives as long as this process, with a warning: digests then
 * differ across restarts, and checkpoints after a restart are signed by a new key that verify does not trust.
 */
async function storedVaultSecret(
  vault: Vault,
  name: string,
  create: () => string,
  warn: (message: string) => void,
): Promise<{ value: string; isStored: boolean }> {
  const existing = await vault.get(name);
  if (existing) return { value: existing, isStored: true };
  const value = create();
  try {
    // Processes starting together on an empty vault each generate one: the one stored first is everyone's.
    return { value: await vault.create(name, value), isStored: true };
  } catch (error) {
    if (!isVaultReadOnly(error)) throw error;
    warn(`the ${vault.provider} vault has no '${name}' and cannot store one: using a key that lasts until this process stops`);
    return { value, isStored: false };
  }
}

function signingKeyOf(pem: string): KeyObject {
  try {
    const key = privateKeyFromPem(pem);
    if (key.asymmetricKeyType !== 'ed25519') throw new Error('not Ed25519');
    return key;
  } catch {
    throw new GatewayError(
      'RECEIPTS_KEY_INVALID',
      `the vault entry '${RECEIPTS_SIGNING_KEY_SECRET}' is not an Ed25519 private key (PKCS#8 PEM)`,
    );
  }
}

/**
 * Reads (creating on first start) the receipt log's keys. `requiresSharedSigningKey`: several processes share the
 * database (`serve --workers`), so the signing key must be kept in the vault, or each process's checkpoints and
 * anchors would be signed by a key the others do not trust.
 */
export async function loadReceiptKeys(options: {
  vault: Vault;
  loaded: LoadedConfig;
  requiresSharedSigningKey?: boolean;
  warn: (message: string) => void;
}): Promise<ReceiptKeys> {
  const { vault, loaded, warn } = options;
  const origin = receiptOrigin(loaded);
  const digestSecret = await storedVaultSecret(vault, RECEIPTS_DIGEST_KEY_SECRET, () => randomBytes(32).toString('base64url'), warn);
  const digestKeyBytes = Buffer.from(digestSecret.value, 'base64url');
  if (digestKeyBytes.length < 16) {
    throw new GatewayError(
      'RECEIPTS_KEY_INVALID',
      `the vault entry '${RECEIPTS_DIGEST_KEY_SECRET}' must hold at least 16 bytes (base64url)`,
    );
  }
  const signing = await storedVaultSecret(
    vault,
    RECEIPTS_SIGNING_KEY_SECRET,
    () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    warn,
  );
  if (!signing.isStored && options.requiresSharedSigningKey) {
    throw new GatewayError(
      'RECEIPTS_SIGNING_KEY_NOT_SHARED',
      `--workers needs the receipt signing key in the vault, but the ${vault.provider} vault has no ` +
        `'${RECEIPTS_SIGNING_KEY_SECRET}' and cannot store one: use the file vault, or provide it ` +
        '(GATEWAY_SECRET_RECEIPTS_SIGNING_KEY with the env vault; docs/receipts.md#configuration)',
    );
  }
  const signingKey = signingKeyOf(signing.value);
  const publicVerifierKey = verifierKey(origin, rawPublicKey(signingKey));
  for (const key of loaded.config.receipts?.trustedKeys ?? []) {
    if (!parseVerifierKey(key)) throw new GatewayError('RECEIPTS_KEY_INVALID', `receipts.trustedKeys: ${key} is not a valid verifier key`);
  }
  return {
    origin,
    digestKey: createSecretKey(digestKeyBytes),
    isDigestKeyKept: digestSecret.isStored,
    journalKey: journalKeyFrom(digestKeyBytes),
    signingKey,
    isSigningKeyKept: signing.isStored,
    verifierKey: publicVerifierKey,
    trustedKeys: [publicVerifierKey, ...trustedReceiptKeys(loaded, undefined).filter((key) => key !== publicVerifierKey)],
  };
}
