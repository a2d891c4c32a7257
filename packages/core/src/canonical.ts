import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';

// canonicalize 4 is CommonJS with a default export; normalise the interop shape once.
const canonicalizeFn = ((canonicalizeModule as unknown as { default?: unknown }).default ??
  canonicalizeModule) as (value: unknown) => string | undefined;

/** RFC 8785 (JSON Canonicalization Scheme) text of a JSON value. */
export function canonicalJson(value: unknown): string {
  const text = canonicalizeFn(value);
  if (text === undefined) throw new TypeError('value cannot be canonicalised as JSON');
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
