/**
 * Publication signatures.
 *
 * What is signed: the RFC 8785 canonical JSON of
 *
 *     { "publication": <the publication as written in tools.lock, without its `signature` member>,
 *       "source": { "name", "kind", "document" } }
 *
 * so every publication field (id, status, toolCount, documentDigest, publishedBy, publishedAt, keyId,
 * allowedStale) and every operation with its fingerprint is covered, and a publication cannot be moved to
 * another source or another document location.
 *
 * How it is carried: a JWS compact serialisation (RFC 7515) with a detached payload (RFC 7515 Appendix F):
 * `<protected header>..<signature>`. The payload is not repeated in the lock because the lock already holds
 * it; a verifier rebuilds it from the lock and checks the signature over `header.base64url(payload)`.
 *
 * The protected header carries `alg: EdDSA` (RFC 8037), `kid` (the RFC 7638 thumbprint of the signing key),
 * `typ` (explicit typing, RFC 8725 §3.11, so a publication signature is never mistaken for a token) and
 * short digests of each operation and of the publication's own fields. Those digests are integrity-protected
 * by the signature like the rest of the header but serve only to explain a failure: when the signature no
 * longer matches, they tell which operation changed since signing.
 */
import { CompactSign, compactVerify, decodeProtectedHeader, importJWK, base64url } from 'jose';
import { canonicalJson, sha256Digest } from './canonical.js';
import { GatewayError } from './errors.js';
import { parseJsonExact, stringifyExact } from './exact-integers.js';
import { PUBLICATION_SIGNING_ALGORITHM, keyIdOf, type PrivateKeyJwk, type PublicKeyJwk } from './keys.js';
import { normaliseLock } from './lockfile.js';
import type { AnyPublication, LockedSource } from './model.js';

/** The JWS `typ` of a publication signature. */
export const PUBLICATION_SIGNATURE_TYPE = 'gateway-publication+jws';

/** The fields of a source a publication signature binds it to. */
export type SignedSourceIdentity = Pick<LockedSource, 'name' | 'kind' | 'document'>;

/** A public key trusted to sign publications, with where it was configured. */
export interface TrustedKey {
  keyId: string;
  publicJwk: PublicKeyJwk;
  /** The file it was read from (for messages). */
  path: string;
}

type PublicationSignatureHeader = {
  alg: string;
  kid: string;
  typ: string;
  /** tool name → first 16 hex digits of the SHA-256 of the operation's canonical JSON (diagnostics only). */
  operationDigests: Record<string, string>;
  /** The same over the publication's own fields and the source identity (diagnostics only). */
  publicationDigest: string;
};

/** The publication exactly as tools.lock writes it (field set and operation order), minus `signature`. */
function writtenForm(source: SignedSourceIdentity, publication: AnyPublication): Omit<AnyPublication, 'signature'> {
  const normalised = normaliseLock({
    lockVersion: 1,
    lastPublication: 0,
    sources: [{ ...source, documentDigest: publication.documentDigest, publications: [publication] } as LockedSource],
  }).sources[0]!.publications[0]!;
  const { signature: _signature, ...rest } = normalised;
  // A JSON round trip drops `undefined` members, which JSON (and so the lock) cannot hold; exact integers
  // (BigInts, exact-integers.ts) survive it.
  return parseJsonExact(stringifyExact(rest)) as Omit<AnyPublication, 'signature'>;
}

/** The exact bytes that are signed (see the module comment). */
export function publicationSigningPayload(source: SignedSourceIdentity, publication: AnyPublication): string {
  return canonicalJson({
    publication: writtenForm(source, publication),
    source: { name: source.name, kind: source.kind, document: source.document },
  });
}

function shortDigest(value: unknown): string {
  return sha256Digest(canonicalJson(value)).slice('sha256:'.length, 'sha256:'.length + 16);
}

function diagnosticDigests(
  source: SignedSourceIdentity,
  publication: AnyPublication,
): Pick<PublicationSignatureHeader, 'operationDigests' | 'publicationDigest'> {
  const { operations, ...fields } = writtenForm(source, publication);
  const operationDigests: Record<string, string> = {};
  for (const operation of operations) operationDigests[operation.tool] = shortDigest(operation);
  return {
    operationDigests,
    publicationDigest: shortDigest({ fields, source: { name: source.name, kind: source.kind, document: source.document } }),
  };
}

/**
 * Signs a publication with a private key and returns it with `keyId` and `signature` set. Every other
 * field must already hold its final value: changing any of them afterwards invalidates the signature.
 */
export async function signPublication<P extends AnyPublication>(
  source: SignedSourceIdentity,
  publication: P,
  privateJwk: PrivateKeyJwk,
): Promise<P> {
  const keyId = await keyIdOf(privateJwk);
  const { signature: _previous, ...unsigned } = publication;
  const toSign: AnyPublication = { ...unsigned, keyId };
  const payload = new TextEncoder().encode(publicationSigningPayload(source, toSign));
  const key = await importJWK({ kty: 'OKP', crv: 'Ed25519', x: privateJwk.x, d: privateJwk.d }, PUBLICATION_SIGNING_ALGORITHM);
  const header: PublicationSignatureHeader = {
    alg: PUBLICATION_SIGNING_ALGORITHM,
    kid: keyId,
    typ: PUBLICATION_SIGNATURE_TYPE,
    ...diagnosticDigests(source, toSign),
  };
  const attached = await new CompactSign(payload).setProtectedHeader(header).sign(key);
  const [protectedHeader, , signatureValue] = attached.split('.');
  // RFC 7515 Appendix F: a detached payload leaves the middle part empty.
  return { ...toSign, signature: `${protectedHeader}..${signatureValue}` } as P;
}

export type SignatureProblemCode = 'LOCK_SIGNATURE_MISSING' | 'LOCK_SIGNATURE_INVALID' | 'LOCK_KEY_UNTRUSTED';

/** Where a publication differs from what was signed, as far as the header's digests can tell. */
export interface SignedContentChange {
  /** `fields`: the publication's own fields or its source; otherwise an operation. */
  kind: 'fields' | 'operation-changed' | 'operation-missing' | 'operation-unexpected';
  tool?: string;
}

export type SignatureCheck =
  | { valid: true; keyId: string }
  | { valid: false; code: SignatureProblemCode; message: string; keyId?: string; changes: SignedContentChange[] };

function failure(
  code: SignatureProblemCode,
  message: string,
  extra: { keyId?: string; changes?: SignedContentChange[] } = {},
): SignatureCheck {
  return { valid: false, code, message, ...(extra.keyId ? { keyId: extra.keyId } : {}), changes: extra.changes ?? [] };
}

/** Compares the header's diagnostic digests with the publication as it is now. */
function changesSinceSigning(
  header: Partial<PublicationSignatureHeader>,
  source: SignedSourceIdentity,
  publication: AnyPublication,
): SignedContentChange[] {
  const now = diagnosticDigests(source, publication);
  const changes: SignedContentChange[] = [];
  if (typeof header.publicationDigest === 'string' && header.publicationDigest !== now.publicationDigest) {
    changes.push({ kind: 'fields' });
  }
  const signed = header.operationDigests && typeof header.operationDigests === 'object' ? header.operationDigests : {};
  for (const [tool, digest] of Object.entries(now.operationDigests)) {
    if (!(tool in signed)) changes.push({ kind: 'operation-unexpected', tool });
    else if (signed[tool] !== digest) changes.push({ kind: 'operation-changed', tool });
  }
  for (const tool of Object.keys(signed)) {
    if (!(tool in now.operationDigests)) changes.push({ kind: 'operation-missing', tool });
  }
  return changes;
}

function describeChanges(changes: SignedContentChange[]): string {
  if (changes.length === 0) return '';
  const parts = changes.map((change) => {
    switch (change.kind) {
      case 'fields':
        return 'the publication fields (id, status, toolCount, digest, publisher, time, key, what it does not offer, or source) changed';
      case 'operation-changed':
        return `operation ${change.tool} changed`;
      case 'operation-missing':
        return `operation ${change.tool} was removed or renamed`;
      case 'operation-unexpected':
        return `operation ${change.tool} was not in the signed set`;
      default: {
        const unreachable: never = change.kind;
        throw new GatewayError('INTERNAL_ERROR', `undescribed signed-content change ${JSON.stringify(unreachable)}`);
      }
    }
  });
  return ` (since signing: ${parts.join('; ')})`;
}

/**
 * Checks a publication's signature against the trusted keys. Findings are returned, never thrown, so a
 * verifier can report every problem at once.
 */
export async function checkPublicationSignature(
  source: SignedSourceIdentity,
  publication: AnyPublication,
  trustedKeys: readonly TrustedKey[],
): Promise<SignatureCheck> {
  const label = `${source.name}/${publication.id}`;
  if (publication.signature === undefined || publication.signature === '') {
    return failure('LOCK_SIGNATURE_MISSING', `${label} is in use but carries no signature; publish it with \`gateway publish\``);
  }
  const parts = publication.signature.split('.');
  if (parts.length !== 3 || parts[1] !== '' || parts[0] === '' || parts[2] === '') {
    return failure('LOCK_SIGNATURE_INVALID', `${label}: the signature is not a detached-payload compact JWS (header..signature)`);
  }
  let header: Partial<PublicationSignatureHeader> & { crit?: unknown; b64?: unknown };
  try {
    header = decodeProtectedHeader(publication.signature) as typeof header;
  } catch {
    return failure('LOCK_SIGNATURE_INVALID', `${label}: the signature's protected header cannot be decoded`);
  }
  // Only our own header shape is accepted: no other algorithm (RFC 8725 §3.1), no `crit` or `b64` extensions.
  if (
    header.alg !== PUBLICATION_SIGNING_ALGORITHM ||
    header.typ !== PUBLICATION_SIGNATURE_TYPE ||
    header.crit !== undefined ||
    header.b64 !== undefined
  ) {
    return failure(
      'LOCK_SIGNATURE_INVALID',
      `${label}: the signature header is not a publication signature (alg EdDSA, typ ${PUBLICATION_SIGNATURE_TYPE})`,
    );
  }
  if (typeof header.kid !== 'string' || header.kid === '') {
    return failure('LOCK_SIGNATURE_INVALID', `${label}: the signature header names no key (kid)`);
  }
  if (publication.keyId !== header.kid) {
    return failure(
      'LOCK_SIGNATURE_INVALID',
      `${label}: keyId ${JSON.stringify(publication.keyId ?? null)} differs from the signing key ${header.kid}`,
      { keyId: header.kid },
    );
  }
  const trusted = trustedKeys.find((key) => key.keyId === header.kid);
  if (!trusted) {
    return failure(
      'LOCK_KEY_UNTRUSTED',
      `${label} is signed by key ${header.kid}, which is not listed under trust.keys in the configuration`,
      { keyId: header.kid },
    );
  }
  const payload = publicationSigningPayload(source, publication);
  const attached = `${parts[0]}.${base64url.encode(payload)}.${parts[2]}`;
  try {
    const key = await importJWK({ kty: 'OKP', crv: 'Ed25519', x: trusted.publicJwk.x }, PUBLICATION_SIGNING_ALGORITHM);
    await compactVerify(attached, key, { algorithms: [PUBLICATION_SIGNING_ALGORITHM] });
  } catch {
    const changes = changesSinceSigning(header, source, publication);
    return failure(
      'LOCK_SIGNATURE_INVALID',
      `${label}: the signature does not match the publication's content${describeChanges(changes)}`,
      { keyId: header.kid, changes },
    );
  }
  return { valid: true, keyId: header.kid };
}

/** Signs and immediately checks, so a broken key never produces a lock that fails verification later. */
export async function signAndCheckPublication<P extends AnyPublication>(
  source: SignedSourceIdentity,
  publication: P,
  privateJwk: PrivateKeyJwk,
  publicJwk: PublicKeyJwk,
): Promise<P> {
  const signed = await signPublication(source, publication, privateJwk);
  const check = await checkPublicationSignature(source, signed, [{ keyId: publicJwk.kid, publicJwk, path: '(signing key)' }]);
  if (!check.valid) {
    throw new GatewayError('PUBLISH_SIGNATURE_FAILED', `the new signature did not verify: ${check.message}`);
  }
  return signed;
}
