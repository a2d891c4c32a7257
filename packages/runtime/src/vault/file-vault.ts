/**
 * The embedded vault: one JSON file of AES-256-GCM ciphertexts, separate from the database.
 *
 * - Each value is sealed with a fresh random 96-bit nonce (NIST SP 800-38D §8.2.2: never reuse a nonce
 *   under one key; random 96-bit nonces are safe far beyond the number of writes a vault sees).
 * - The additional authenticated data binds each ciphertext to its secret's name, so swapping two
 *   entries in the file makes both fail to open instead of handing one secret out under another name.
 * - A key check value (a sealed constant) detects a wrong key before a new secret is sealed under it,
 *   so a vault never ends up holding values under two different keys.
 * - Names and metadata (created, updated, version) are in clear: `list` needs no key. Values never are.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { compareText, GatewayError, writeFileAtomically } from '@gateway/core';
import type { SecretMetadata, Vault } from './vault.js';

export interface FileVaultOptions {
  /** The encrypted vault file. */
  path: string;
  /** Name of the environment variable that may hold the base64 key. */
  keyEnv: string;
  /** True when `keyEnv` was configured explicitly: then a missing variable is an error, not a fallback. */
  keyEnvRequired: boolean;
  /** The 0600 key file used when the environment variable is not set. */
  keyFile: string;
  env: NodeJS.ProcessEnv;
}

interface Sealed {
  nonce: string;
  ciphertext: string;
  tag: string;
}

interface StoredSecret extends Sealed {
  createdAt: string;
  updatedAt: string;
  version: number;
}

interface VaultDocument {
  vaultVersion: 1;
  cipher: 'aes-256-gcm';
  keyCheck?: Sealed;
  secrets: Record<string, StoredSecret>;
}

const KEY_CHECK_AAD = 'gateway-vault/v1/key-check';
const KEY_CHECK_PLAINTEXT = 'gateway-vault key check';
const SECRET_NAME = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$/;

export function checkSecretName(name: string): void {
  if (!SECRET_NAME.test(name)) {
    throw new GatewayError(
      'VAULT_SECRET_NAME_INVALID',
      `'${name}' is not a valid secret name: use letters, digits, '.', '_', '/' and '-', starting with a letter or digit (at most 128)`,
    );
  }
}

/** A name and value a writable vault accepts (`set`, `create`). */
export function checkSecretToStore(name: string, value: string): void {
  checkSecretName(name);
  if (value.length === 0) throw new GatewayError('VAULT_SECRET_EMPTY', `refusing to store an empty value for '${name}'`);
}

function secretAad(name: string): Buffer {
  return Buffer.from(`gateway-vault/v1/secret/${name}`, 'utf8');
}

function seal(key: Buffer, plaintext: string, aad: Buffer): Sealed {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { nonce: nonce.toString('base64'), ciphertext: ciphertext.toString('base64'), tag: cipher.getAuthTag().toString('base64') };
}

/** Opens a sealed value; undefined when the key is wrong or the entry was altered (GCM tag mismatch). */
function unseal(key: Buffer, sealed: Sealed, aad: Buffer): string | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.nonce, 'base64'));
    decipher.setAAD(aad);
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

function emptyDocument(): VaultDocument {
  return { vaultVersion: 1, cipher: 'aes-256-gcm', secrets: {} };
}

export function decodeKey(text: string, where: string): Buffer {
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, 'base64');
  // Buffer.from ignores junk silently: round-trip to be sure the text really was base64.
  if (key.length !== 32 || key.toString('base64').replace(/=+$/, '') !== trimmed.replace(/=+$/, '')) {
    throw new GatewayError('VAULT_KEY_INVALID', `${where} is not a base64-encoded 256-bit key (32 bytes)`);
  }
  return key;
}

/**
 * Reads the vault file, parsed and checked; an absent file is an empty vault. Kept while the file is unchanged
 * (same inode, time and size: writes rename a new file into place); `forget` drops what is kept.
 */
function vaultFileReader(path: string): { read(): Promise<VaultDocument>; forget(): void } {
  let cache: { identity: string; document: VaultDocument } | undefined;

  async function read(): Promise<VaultDocument> {
    let identity: string;
    try {
      const info = await stat(path);
      // Atomic writes rename a new file into place: a new inode means new content.
      identity = `${info.ino}:${info.mtimeMs}:${info.size}`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return emptyDocument();
      throw unreadable(error);
    }
    if (cache?.identity === identity) return cache.document;
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return emptyDocument();
      throw unreadable(error);
    }
    let document: VaultDocument;
    try {
      document = JSON.parse(text) as VaultDocument;
    } catch {
      throw new GatewayError('VAULT_FILE_INVALID', `${path} is not a vault file (not JSON)`);
    }
    if (document?.vaultVersion !== 1 || document.cipher !== 'aes-256-gcm' || typeof document.secrets !== 'object' || !document.secrets) {
      throw new GatewayError('VAULT_FILE_INVALID', `${path} is not a version 1 vault file`);
    }
    cache = { identity, document };
    return document;
  }

  function unreadable(error: unknown): GatewayError {
    return new GatewayError('VAULT_FILE_INVALID', `cannot read ${path}: ${(error as Error).message}`);
  }

  return {
    read,
    forget: () => {
      cache = undefined;
    },
  };
}

/** Runs `action` holding the vault file's write lock (`<path>.lock`, created exclusively; a stale one is taken over). */
async function withWriteLock<T>(path: string, action: () => Promise<T>): Promise<T> {
  const lockPath = `${path}.lock`;
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      const handle = await open(lockPath, 'wx', 0o600);
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const info = await stat(lockPath).catch(() => undefined);
      // A writer holds the lock for milliseconds; one older than 30 s belongs to a crashed process.
      if (info && Date.now() - info.mtimeMs > 30_000) await unlink(lockPath).catch(() => undefined);
      if (Date.now() > deadline) {
        throw new GatewayError('VAULT_BUSY', `${lockPath} is held by another writer; retry, or remove it if no gateway command is running`);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  try {
    return await action();
  } finally {
    await unlink(lockPath).catch(() => undefined);
  }
}

/** Seals `value` into the document under `name`, a new version of what was there (first writes the key check). */
function storeIn(document: VaultDocument, key: Buffer, name: string, value: string): StoredSecret {
  document.keyCheck ??= seal(key, KEY_CHECK_PLAINTEXT, Buffer.from(KEY_CHECK_AAD));
  const now = new Date().toISOString();
  const previous = Object.hasOwn(document.secrets, name) ? document.secrets[name] : undefined;
  const stored: StoredSecret = {
    createdAt: previous?.createdAt ?? now,
    updatedAt: now,
    version: (previous?.version ?? 0) + 1,
    ...seal(key, value, secretAad(name)),
  };
  document.secrets[name] = stored;
  return stored;
}

function metadataOf(name: string, stored: StoredSecret): SecretMetadata {
  return { name, createdAt: stored.createdAt, updatedAt: stored.updatedAt, version: stored.version };
}

export function createFileVault(options: FileVaultOptions): Vault {
  let cachedKey: Buffer | undefined;
  let verifiedKeyCheck = false;
  const file = vaultFileReader(options.path);
  const readDocument = file.read;

  /** The key from the environment or the key file; created (0600) when `create` and none exists yet. */
  async function loadKey(document: VaultDocument, create: boolean): Promise<Buffer | undefined> {
    if (cachedKey) return cachedKey;
    const fromEnv = options.env[options.keyEnv];
    if (fromEnv !== undefined && fromEnv.trim() !== '') {
      cachedKey = decodeKey(fromEnv, `the environment variable ${options.keyEnv}`);
      return cachedKey;
    }
    if (options.keyEnvRequired) {
      throw new GatewayError('VAULT_KEY_MISSING', `the vault key variable ${options.keyEnv} (vault.file.keyEnv) is not set`);
    }
    let mode: number;
    try {
      const info = await stat(options.keyFile);
      if (!info.isFile()) {
        throw new GatewayError('VAULT_KEY_INVALID', `the vault key file ${options.keyFile} is not a regular file`);
      }
      mode = info.mode;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      if (!create) return undefined;
      if (Object.keys(document.secrets).length > 0 || document.keyCheck) {
        // Generating a key now would orphan every stored value.
        throw missingKey();
      }
      await mkdir(dirname(options.keyFile), { recursive: true, mode: 0o700 });
      const generated = randomBytes(32);
      try {
        await writeFile(options.keyFile, `${generated.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
        cachedKey = generated;
        return generated;
      } catch (writeError) {
        if ((writeError as NodeJS.ErrnoException).code !== 'EEXIST') throw writeError;
        return loadKey(document, false); // another process created it first: use theirs
      }
    }
    // The key protects every secret: refuse a key file others can read (like ssh refuses a 0644 private key).
    if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
      throw new GatewayError(
        'VAULT_KEY_PERMISSIONS',
        `the vault key file ${options.keyFile} is readable by others (mode ${(mode & 0o777).toString(8)}); run chmod 600 on it`,
      );
    }
    cachedKey = decodeKey(await readFile(options.keyFile, 'utf8'), `the vault key file ${options.keyFile}`);
    return cachedKey;
  }

  function missingKey(): GatewayError {
    return new GatewayError(
      'VAULT_KEY_MISSING',
      `the vault ${options.path} holds secrets but no key was found: set ${options.keyEnv} or restore ${options.keyFile}`,
    );
  }

  function verifyKey(document: VaultDocument, key: Buffer): void {
    if (verifiedKeyCheck || !document.keyCheck) return;
    if (unseal(key, document.keyCheck, Buffer.from(KEY_CHECK_AAD)) !== KEY_CHECK_PLAINTEXT) {
      throw wrongKey();
    }
    verifiedKeyCheck = true;
  }

  function wrongKey(): GatewayError {
    return new GatewayError('VAULT_KEY_INVALID', `the vault key does not open ${options.path} (wrong key, or the file was altered)`);
  }

  /** `edit` on a copy of the document as the file holds it now (not a cached read), under the lock every writer takes. */
  const underWriteLock = <T>(edit: (document: VaultDocument) => Promise<T>): Promise<T> =>
    withWriteLock(options.path, async () => {
      file.forget();
      return edit(structuredClone(await readDocument()));
    });

  async function writeDocument(document: VaultDocument): Promise<void> {
    const sorted: VaultDocument = {
      ...document,
      secrets: Object.fromEntries(Object.entries(document.secrets).sort(([a], [b]) => compareText(a, b))),
    };
    await writeFileAtomically(options.path, `${JSON.stringify(sorted, null, 2)}\n`, 0o600);
    file.forget();
  }

  return {
    provider: 'file',

    async get(name) {
      const document = await readDocument();
      const stored = Object.hasOwn(document.secrets, name) ? document.secrets[name] : undefined;
      if (!stored) return undefined;
      const key = await loadKey(document, false);
      if (!key) throw missingKey();
      verifyKey(document, key);
      const value = unseal(key, stored, secretAad(name));
      if (value === undefined) throw wrongKey();
      return value;
    },

    async set(name, value) {
      checkSecretToStore(name, value);
      return underWriteLock(async (document) => {
        const key = (await loadKey(document, true))!;
        verifyKey(document, key);
        const stored = storeIn(document, key, name, value);
        await writeDocument(document);
        return metadataOf(name, stored);
      });
    },

    async create(name, value) {
      checkSecretToStore(name, value);
      // The check and the write under the writers' lock, on the file as it is now: of processes creating one name
      // at once, the first stores its value and the others read it back.
      return underWriteLock(async (document) => {
        const key = (await loadKey(document, true))!;
        verifyKey(document, key);
        const previous = Object.hasOwn(document.secrets, name) ? document.secrets[name] : undefined;
        if (previous) {
          const stored = unseal(key, previous, secretAad(name));
          if (stored === undefined) throw wrongKey();
          return stored;
        }
        storeIn(document, key, name, value);
        await writeDocument(document);
        return value;
      });
    },

    async delete(name) {
      return underWriteLock(async (document) => {
        if (!Object.hasOwn(document.secrets, name)) return false;
        delete document.secrets[name];
        await writeDocument(document);
        return true;
      });
    },

    async list() {
      const document = await readDocument();
      return Object.entries(document.secrets)
        .map(([name, stored]) => metadataOf(name, stored))
        .sort((a, b) => compareText(a.name, b.name));
    },
  };
}
