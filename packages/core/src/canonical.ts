import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { serialiseWithExactIntegers } from './exact-integers.js';

// canonicalize 4 is CommonJS with a default export; normalise the interop shape once.
const canonicalizeFn = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as (
  value: unknown,
) => string | undefined;

/**
 * RFC 8785 (JSON Canonicalization Scheme) text of a JSON value, with one extension (docs/lockfile.md › Large
 * integers): a BigInt, which the gateway holds only for an integer literal a double cannot represent exactly,
 * is written as its exact decimal digits where RFC 8785 §3.2.2.3 would write the double it rounds to. A value
 * without a BigInt gets exactly the RFC 8785 text, so no existing fingerprint or signature changes.
 */
export function canonicalJson(value: unknown): string {
  const text = serialiseWithExactIntegers(value, (plain) => {
    const canonical = canonicalizeFn(plain);
    if (canonical === undefined) throw new TypeError('value cannot be canonicalised as JSON');
    return canonical;
  });
  return text;
}

/** `sha256:<hex>` of some bytes or text. */
export function sha256Digest(data: string | Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** `sha256:<hex>` of the RFC 8785 canonical JSON of a value. */
export function canonicalDigest(value: unknown): string {
  return sha256Digest(canonicalJson(value));
}
