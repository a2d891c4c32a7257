/**
 * Publisher keys: Ed25519 key pairs kept as JSON Web Keys (RFC 7517, OKP keys per RFC 8037).
 * The key id is the RFC 7638 thumbprint, so it is derived from the key itself and cannot be chosen
 * to impersonate another key.
 */
import { readFile } from 'node:fs/promises';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { GatewayError, type ErrorCode } from './errors.js';

/** The public half of a publisher key, as written to `<name>.pub.jwk` and listed under `trust.keys`. */
export interface PublicKeyJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

/** The private half, as written to `<name>.private.jwk` (mode 0600). */
export interface PrivateKeyJwk extends PublicKeyJwk {
  d: string;
}

export interface PublisherKeyPair {
  keyId: string;
  privateJwk: PrivateKeyJwk;
  publicJwk: PublicKeyJwk;
}

/** The only algorithm publications are signed with (RFC 8037 §3.1: EdDSA over Ed25519). */
export const PUBLICATION_SIGNING_ALGORITHM = 'EdDSA';

/** RFC 7638 thumbprint (SHA-256, base64url) of an OKP key: only `crv`, `kty` and `x` are hashed. */
export async function keyIdOf(jwk: { kty: string; crv?: string; x?: string }): Promise<string> {
  return calculateJwkThumbprint({ kty: jwk.kty, crv: jwk.crv, x: jwk.x } as JWK, 'sha256');
}

/** Generates a fresh Ed25519 key pair with its thumbprint as `kid`. */
export async function generatePublisherKeyPair(): Promise<PublisherKeyPair> {
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const exported = await exportJWK(privateKey);
  const keyId = await keyIdOf(exported as { kty: string; crv: string; x: string });
  const publicJwk: PublicKeyJwk = { kty: 'OKP', crv: 'Ed25519', x: exported.x!, kid: keyId, alg: 'EdDSA', use: 'sig' };
  return { keyId, publicJwk, privateJwk: { ...publicJwk, d: exported.d! } };
}

/** The public part of a private key (drops `d`, recomputes `kid`). */
export async function publicJwkOf(jwk: PublicKeyJwk | PrivateKeyJwk): Promise<PublicKeyJwk> {
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x, kid: await keyIdOf(jwk), alg: 'EdDSA', use: 'sig' };
}

interface ParseOptions {
  /** Names the key in error messages (a file path, or `GATEWAY_PUBLISH_KEY`). */
  where: string;
}

/**
 * A private key is the publisher's signing key, given on the command line (a usage error when wrong); a public key
 * is a `trust.keys` entry of gateway.yaml (a configuration error). Each role has its own codes, so the exit code
 * follows from the code alone.
 */
type KeyRole = 'signing' | 'trust';

const INVALID_CODE = { signing: 'KEY_INVALID', trust: 'TRUST_KEY_INVALID' } as const satisfies Record<KeyRole, ErrorCode>;
const UNREADABLE_CODE = { signing: 'KEY_UNREADABLE', trust: 'TRUST_KEY_UNREADABLE' } as const satisfies Record<KeyRole, ErrorCode>;

function invalid(where: string, problem: string, role: KeyRole): GatewayError {
  return new GatewayError(INVALID_CODE[role], `${where}: ${problem}`, { details: { where } });
}

/** Checks the JSON members every publisher key has; never echoes key material in errors. */
function parseKeyObject(text: string, options: ParseOptions, role: KeyRole): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid(options.where, 'not a JSON Web Key (the text is not JSON)', role);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(options.where, 'not a JSON Web Key (expected a JSON object)', role);
  }
  const jwk = value as Record<string, unknown>;
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519') {
    throw invalid(
      options.where,
      `not an Ed25519 key (kty ${JSON.stringify(jwk.kty)}, crv ${JSON.stringify(jwk.crv)}); publications are signed with ` +
        'Ed25519 keys made by `gateway keys generate`',
      role,
    );
  }
  if (typeof jwk.x !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(jwk.x)) {
    throw invalid(options.where, 'member "x" must be the 32-byte public key in base64url', role);
  }
  if (jwk.alg !== undefined && jwk.alg !== PUBLICATION_SIGNING_ALGORITHM) {
    throw invalid(options.where, `member "alg" must be EdDSA when present, not ${JSON.stringify(jwk.alg)}`, role);
  }
  return jwk;
}

/** Parses the JSON text of a private publisher key (the output of `gateway keys generate`). */
export async function parsePrivateJwk(text: string, options: ParseOptions): Promise<PrivateKeyJwk> {
  const role = 'signing';
  const jwk = parseKeyObject(text, options, role);
  if (typeof jwk.d !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(jwk.d)) {
    throw new GatewayError(
      'KEY_NOT_PRIVATE',
      `${options.where}: not a private key (member "d" is missing); pass the *.private.jwk file to sign`,
      { details: { where: options.where } },
    );
  }
  const publicJwk = await publicJwkOf(jwk as unknown as PublicKeyJwk);
  if (jwk.kid !== undefined && jwk.kid !== publicJwk.kid) {
    throw invalid(options.where, `member "kid" is not the RFC 7638 thumbprint of the key (expected ${publicJwk.kid})`, role);
  }
  try {
    await importJWK({ kty: 'OKP', crv: 'Ed25519', x: publicJwk.x, d: jwk.d as string }, PUBLICATION_SIGNING_ALGORITHM);
  } catch {
    throw invalid(options.where, 'the key material cannot be imported as an Ed25519 private key', role);
  }
  return { ...publicJwk, d: jwk.d as string };
}

/**
 * Parses the JSON text of a public publisher key. A file that also holds the private part is refused:
 * trust files are committed to git, and a private key there would let anyone reading the repository sign.
 */
export async function parsePublicJwk(text: string, options: ParseOptions): Promise<PublicKeyJwk> {
  const role = 'trust';
  const jwk = parseKeyObject(text, options, role);
  if (jwk.d !== undefined) {
    throw new GatewayError(
      'KEY_PRIVATE_PART_PRESENT',
      `${options.where}: holds a private key (member "d"); list only the *.pub.jwk file here and keep the private one secret`,
      { details: { where: options.where } },
    );
  }
  const publicJwk = await publicJwkOf(jwk as unknown as PublicKeyJwk);
  if (jwk.kid !== undefined && jwk.kid !== publicJwk.kid) {
    throw invalid(options.where, `member "kid" is not the RFC 7638 thumbprint of the key (expected ${publicJwk.kid})`, role);
  }
  try {
    await importJWK({ kty: 'OKP', crv: 'Ed25519', x: publicJwk.x }, PUBLICATION_SIGNING_ALGORITHM);
  } catch {
    throw invalid(options.where, 'the key material cannot be imported as an Ed25519 public key', role);
  }
  return publicJwk;
}

async function readKeyText(path: string, role: KeyRole): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new GatewayError(
      UNREADABLE_CODE[role],
      code === 'ENOENT' ? `no key file at ${path}` : `cannot read key file ${path}: ${(error as Error).message}`,
      { details: { path } },
    );
  }
}

/** The publisher's signing key from a file (`--key`, GATEWAY_PUBLISH_KEY_FILE). */
export async function readPrivateKeyFile(path: string): Promise<PrivateKeyJwk> {
  return parsePrivateJwk(await readKeyText(path, 'signing'), { where: path });
}

/** A `trust.keys` entry of gateway.yaml. */
export async function readPublicKeyFile(path: string): Promise<PublicKeyJwk> {
  return parsePublicJwk(await readKeyText(path, 'trust'), { where: path });
}

/** JSON text of a key as written to disk: stable member order, one trailing newline. */
export function keyFileText(jwk: PublicKeyJwk | PrivateKeyJwk): string {
  const ordered: Record<string, string> = { kty: jwk.kty, crv: jwk.crv, x: jwk.x };
  if ('d' in jwk) ordered.d = jwk.d;
  Object.assign(ordered, { kid: jwk.kid, alg: jwk.alg, use: jwk.use });
  return `${JSON.stringify(ordered, null, 2)}\n`;
}
