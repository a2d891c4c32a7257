/**
 * Checkpoints of the receipt log: the C2SP `tlog-checkpoint` body (origin, tree size, base64 root hash)
 * signed as a C2SP `signed-note` with Ed25519. Pure functions over node:crypto; the server signs with a
 * key from the vault, anyone verifies with the public key alone (docs/receipts.md).
 */
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

/** C2SP signed-note: the signature type byte of Ed25519 keys. */
const ED25519_SIGNATURE_TYPE = 0x01;
/** The prefix of a SubjectPublicKeyInfo DER of an Ed25519 key (RFC 8410), before the 32 raw key bytes. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface Checkpoint {
  origin: string;
  size: number;
  /** The 32-byte root hash. */
  rootHash: Buffer;
}

/** The checkpoint body: `<origin>\n<size>\n<base64 root>\n` (C2SP tlog-checkpoint). */
export function formatCheckpoint(checkpoint: Checkpoint): string {
  return `${checkpoint.origin}\n${checkpoint.size}\n${checkpoint.rootHash.toString('base64')}\n`;
}

/** Parses a checkpoint body (the note text before the blank line); undefined when it is not one. */
export function parseCheckpoint(body: string): Checkpoint | undefined {
  const lines = body.split('\n');
  if (lines.length < 4 || lines[lines.length - 1] !== '') return undefined;
  const [origin, sizeText, rootText] = lines;
  if (!origin || !/^(0|[1-9][0-9]*)$/.test(sizeText ?? '') || !rootText) return undefined;
  const rootHash = Buffer.from(rootText, 'base64');
  if (rootHash.length !== 32 || rootHash.toString('base64') !== rootText) return undefined;
  return { origin, size: Number(sizeText), rootHash };
}

/** The raw 32-byte Ed25519 public key of a key object. */
export function rawPublicKey(key: KeyObject): Buffer {
  const der = createPublicKey(key).export({ type: 'spki', format: 'der' });
  return Buffer.from(der.subarray(der.length - 32));
}

/** An Ed25519 public key object from its raw 32 bytes. */
export function publicKeyFromRaw(raw: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

/** C2SP signed-note key ID: the first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key). */
export function noteKeyId(name: string, publicKey: Uint8Array): Buffer {
  return createHash('sha256')
    .update(name, 'utf8')
    .update(Buffer.from([0x0a, ED25519_SIGNATURE_TYPE]))
    .update(publicKey)
    .digest()
    .subarray(0, 4);
}

/** The verifier key string of C2SP signed-note: `<name>+<hex key ID>+<base64(0x01 || public key)>`. */
export function verifierKey(name: string, publicKey: Uint8Array): string {
  const encoded = Buffer.concat([Buffer.from([ED25519_SIGNATURE_TYPE]), publicKey]).toString('base64');
  return `${name}+${noteKeyId(name, publicKey).toString('hex')}+${encoded}`;
}

/** Parses a verifier key string; undefined when malformed or its key ID does not match. */
export function parseVerifierKey(text: string): { name: string; keyId: Buffer; publicKey: Buffer } | undefined {
  const match = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/=]+)$/.exec(text);
  if (!match) return undefined;
  const bytes = Buffer.from(match[3]!, 'base64');
  if (bytes.length !== 33 || bytes[0] !== ED25519_SIGNATURE_TYPE) return undefined;
  const publicKey = bytes.subarray(1);
  const keyId = noteKeyId(match[1]!, publicKey);
  if (keyId.toString('hex') !== match[2]) return undefined;
  return { name: match[1]!, keyId, publicKey };
}

/**
 * A signed note (C2SP signed-note): the text, a blank line, and one signature line
 * `— <name> <base64(key ID || Ed25519 signature of the text)>`.
 */
export function signNote(text: string, name: string, privateKey: KeyObject): string {
  if (!text.endsWith('\n')) throw new TypeError('a note text ends with a newline');
  const publicKey = rawPublicKey(privateKey);
  const signature = sign(null, Buffer.from(text, 'utf8'), privateKey);
  const encoded = Buffer.concat([noteKeyId(name, publicKey), signature]).toString('base64');
  return `${text}\n\u2014 ${name} ${encoded}\n`;
}

/**
 * The text of a signed note when one of its signature lines is by `name` with this public key and
 * verifies; undefined otherwise (unknown signers are ignored, as the spec allows).
 */
export function verifyNote(note: string, name: string, publicKey: Uint8Array): string | undefined {
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) return undefined;
  const text = note.slice(0, split + 1);
  const keyId = noteKeyId(name, publicKey);
  const key = publicKeyFromRaw(publicKey);
  for (const line of note.slice(split + 2, -1).split('\n')) {
    const match = /^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const bytes = Buffer.from(match[2]!, 'base64');
    if (bytes.length !== 68 || !bytes.subarray(0, 4).equals(keyId)) continue;
    if (verify(null, Buffer.from(text, 'utf8'), key, bytes.subarray(4))) return text;
  }
  return undefined;
}

/** A new Ed25519 private key from its PKCS#8 PEM (the vault holds this text). */
export function privateKeyFromPem(pem: string): KeyObject {
  return createPrivateKey({ key: pem, format: 'pem' });
}

/**
 * The checkpoint of a signed note when one of `trustedKeys` (verifier key strings) signed it and its origin is
 * that key's name; undefined otherwise. Only the keys given are tried: a key named next to the note (in a
 * database or an export) proves nothing, since whoever wrote the note could have written the key too.
 */
export function verifyCheckpointNote(
  note: string,
  trustedKeys: readonly string[],
): { checkpoint: Checkpoint; verifierKey: string } | undefined {
  for (const trusted of trustedKeys) {
    const key = parseVerifierKey(trusted);
    if (!key) continue;
    const text = verifyNote(note, key.name, key.publicKey);
    const checkpoint = text === undefined ? undefined : parseCheckpoint(text);
    if (checkpoint && checkpoint.origin === key.name) return { checkpoint, verifierKey: trusted };
  }
  return undefined;
}
