/**
 * JSON Pointer (RFC 6901) references inside one (bundled) OpenAPI document.
 *
 * The importer never dereferences the whole document into a JS object graph: circular schemas would make that graph
 * infinite for any consumer that walks it. Non-schema objects (parameters, request bodies, path items, security
 * schemes, examples) are resolved here on demand; schema references are handled by `schema.ts`.
 */

/** Raised while normalising one operation; the operation becomes `REFERENCE_UNRESOLVABLE`, the import goes on. */
export class UnresolvableReferenceError extends Error {
  readonly reference: string;
  constructor(reference: string, why: string) {
    super(`reference "${reference}" cannot be resolved: ${why}`);
    this.name = 'UnresolvableReferenceError';
    this.reference = reference;
  }
}

/**
 * A reference to another document left in place (remote references when they are not allowed). Needing one to
 * describe an operation fails the import with OPENAPI_REMOTE_REF_REFUSED; unused ones are harmless.
 */
export class ExternalReferenceError extends UnresolvableReferenceError {
  constructor(reference: string) {
    super(reference, 'it points to another document, and remote references are not allowed for this source');
    this.name = 'ExternalReferenceError';
  }
}

/** Chains of `$ref` → `$ref` → … longer than this are treated as a loop. */
const MAX_REFERENCE_CHAIN = 32;

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isReference(value: unknown): value is { $ref: string } & Record<string, unknown> {
  return isObject(value) && typeof value.$ref === 'string';
}

/** RFC 6901 §4: `~1` is `/`, `~0` is `~` (in that order). */
export function unescapePointerSegment(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

export function escapePointerSegment(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * The JSON Pointer of a same-document reference (`#/components/schemas/Pet` → `/components/schemas/Pet`), or null
 * when the reference points at another document. RFC 6901 §6: in a URI fragment the pointer is percent-encoded.
 */
export function localPointerOf(reference: string): string | null {
  if (!reference.startsWith('#')) return null;
  const fragment = reference.slice(1);
  try {
    return decodeURIComponent(fragment);
  } catch {
    return fragment;
  }
}

/** The value at a JSON Pointer, or `undefined` when some segment does not exist. */
export function valueAtPointer(document: unknown, pointer: string): unknown {
  if (pointer === '') return document;
  if (!pointer.startsWith('/')) return undefined;
  let current: unknown = document;
  for (const raw of pointer.slice(1).split('/')) {
    const segment = unescapePointerSegment(raw);
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(segment)) return undefined;
      current = current[Number(segment)];
    } else if (isObject(current)) {
      if (!Object.hasOwn(current, segment)) return undefined;
      current = current[segment];
    } else {
      return undefined;
    }
  }
  return current;
}

export function pointerSegments(pointer: string): string[] {
  return pointer === '' ? [] : pointer.slice(1).split('/').map(unescapePointerSegment);
}

/** Follows a reference to its final target (through chains of references), with its pointer. */
export function resolveReference(document: unknown, reference: string): { pointer: string; value: unknown } {
  let current = reference;
  for (let step = 0; step < MAX_REFERENCE_CHAIN; step += 1) {
    const pointer = localPointerOf(current);
    if (pointer === null) throw new ExternalReferenceError(current);
    const value = valueAtPointer(document, pointer);
    if (value === undefined) throw new UnresolvableReferenceError(current, 'nothing exists at that location');
    if (!isReference(value)) return { pointer, value };
    current = value.$ref;
  }
  throw new UnresolvableReferenceError(reference, `it is a chain of more than ${MAX_REFERENCE_CHAIN} references (a loop?)`);
}

/**
 * Resolves a non-schema object that may be a Reference Object. OpenAPI 3.1+ lets a Reference Object override the
 * target's `summary` and `description` (OAS 3.1 §4.8.23); those overrides are applied.
 */
export function resolveObject(document: unknown, value: unknown): Record<string, unknown> {
  if (!isReference(value)) {
    if (!isObject(value)) throw new UnresolvableReferenceError('(inline)', 'the value is not an object');
    return value;
  }
  const target = resolveReference(document, value.$ref).value;
  if (!isObject(target)) throw new UnresolvableReferenceError(value.$ref, 'the target is not an object');
  const overrides: Record<string, unknown> = {};
  if (typeof value.summary === 'string') overrides.summary = value.summary;
  if (typeof value.description === 'string') overrides.description = value.description;
  return Object.keys(overrides).length === 0 ? target : { ...target, ...overrides };
}
