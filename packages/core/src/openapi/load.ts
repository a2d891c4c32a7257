/**
 * Reading an OpenAPI document: from a file or an http(s) URL, within a size limit, JSON or YAML (with a cap on YAML
 * aliases), version checked (3.0.x, 3.1.x, 3.2.x), bundled when it references other files, and validated against
 * the official OpenAPI JSON Schemas.
 */
import { constants as fsConstants } from 'node:fs';
import { open, readFile, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve as resolvePath, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
// The bundler and the OpenAPI schema validator are imported where they are used, at the first import of a
// document: a serving gateway (which imports no document unless drift is checked) never loads them, nor their
// ajv instances and schemas (docs/server.md, "Memory").
import type { Validator } from '@seriousme/openapi-schema-validator';
import { parse as parseYaml } from 'yaml';
import { GatewayError } from '../errors.js';
import { mayHoldUnsafeIntegers, narrowSafeBigInts, parseJsonExact, withDoubles } from '../exact-integers.js';
import { isObject, isReference, localPointerOf, resolveReference } from './references.js';

/** Documents (and, for multi-file documents, all their files together) larger than this are refused. */
export const DEFAULT_MAX_DOCUMENT_BYTES = 25 * 1024 * 1024;
export const DEFAULT_FETCH_TIMEOUT_MS = 15_000;
/**
 * YAML aliases expanded per document at most (the `yaml` package counts the nodes an alias expands to). Real
 * descriptions rarely use aliases; "billion laughs" documents need millions.
 */
export const MAX_YAML_ALIAS_COUNT = 100;

/**
 * Nesting depth (objects and arrays, the document itself being depth 1) a document may have. The deepest of the
 * 89 corpus documents is 30; hostile documents nest thousands deep to exhaust the stack of recursive steps
 * (bundling, validation, schema conversion), so the depth is checked, without recursion, right after parsing.
 * 128 leaves room for a 100-level schema (real documents nest deep schemas) while every lock written from it
 * stays within the lock reader's own limit (LOCK_MAX_DEPTH, 256).
 */
export const MAX_DOCUMENT_DEPTH = 128;

export type FetchText = (url: string, limits: { maxBytes: number; timeoutMs: number }) => Promise<string>;

export function isUrlLocation(location: string): boolean {
  return /^https?:\/\//i.test(location);
}

function tooLarge(where: string, maxBytes: number): GatewayError {
  return new GatewayError(
    'OPENAPI_TOO_LARGE',
    `${where} is larger than the limit of ${maxBytes} bytes (${(maxBytes / 1024 / 1024).toFixed(1)} MiB); ` +
      'raise import.maxDocumentBytes in gateway.yaml if the document is genuine.',
    { details: { maxBytes } },
  );
}

export function checkDocumentSize(text: string, where: string, maxBytes: number): void {
  // Cheap bound first: a UTF-8 encoding is at least as long as the string and at most 3 bytes per UTF-16 unit.
  if (text.length > maxBytes || (text.length * 3 > maxBytes && Buffer.byteLength(text, 'utf8') > maxBytes)) {
    throw tooLarge(where, maxBytes);
  }
}

/**
 * Core never opens a network connection itself (it stays pure): a URL is read by the `fetchText` the caller
 * injects, which for the CLI and the server alike is @gateway/runtime's SSRF-guarded document fetcher. A caller
 * that forgets to inject one gets this refusal rather than an unguarded fetch.
 */
export const noFetcher: FetchText = async (url) => {
  throw new GatewayError(
    'OPENAPI_FETCHER_MISSING',
    `${url} is a URL, but no guarded fetcher was given to the importer; nothing was fetched.`,
  );
};

/**
 * Bytes to text, refusing what is not UTF-8 (RFC 8259 §8.1, YAML 1.2 §5.2 for our purposes) instead of turning
 * it into U+FFFD: a replaced character would silently change names and digests. A byte order mark is kept
 * (the parser skips it) so the digest stays that of the bytes as written.
 */
export function decodeDocumentBytes(bytes: Uint8Array, where: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch (error) {
    throw new GatewayError(
      'OPENAPI_NOT_UTF8',
      `${where} is not valid UTF-8 text; save it as UTF-8 (it was not read, nothing was replaced).`,
      { cause: error },
    );
  }
}

/** Reads a local file within the size limit. */
export async function readDocumentFile(path: string, where: string, maxBytes: number): Promise<string> {
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) {
      throw new GatewayError('OPENAPI_NOT_FOUND', `${where} is not a file.`);
    }
    size = info.size;
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new GatewayError(
      code === 'ENOENT' || code === 'ENOTDIR' ? 'OPENAPI_NOT_FOUND' : 'OPENAPI_UNREADABLE',
      code === 'ENOENT' || code === 'ENOTDIR'
        ? `${where} does not exist (looked for ${path}).`
        : `${where} cannot be read: ${(error as Error).message}.`,
      { cause: error },
    );
  }
  if (size > maxBytes) throw tooLarge(where, maxBytes);
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw new GatewayError('OPENAPI_UNREADABLE', `${where} cannot be read: ${(error as Error).message}.`, {
      cause: error,
    });
  }
  return decodeDocumentBytes(bytes, where);
}

function tooDeep(where: string, cause?: unknown): GatewayError {
  return new GatewayError(
    'OPENAPI_TOO_DEEP',
    `${where} nests objects or arrays deeper than the limit of ${MAX_DOCUMENT_DEPTH} levels; it is refused.`,
    { details: { maxDepth: MAX_DOCUMENT_DEPTH }, ...(cause === undefined ? {} : { cause }) },
  );
}

/** Values that are names the gateway carries into tools and requests (beside object keys, which all are). */
const NAME_VALUED_KEYS = new Set(['operationId', 'name']);

function nameWithNul(where: string, pointer: string, name: string): GatewayError {
  return new GatewayError(
    'OPENAPI_NAME_INVALID',
    `${where}: the name ${JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name)} at ${pointer || '/'} ` +
      `contains a NUL character (U+0000); names ` +
      '(paths, operationIds, parameter and property names) must not contain one.',
    { details: { pointer: pointer || '/' } },
  );
}

/**
 * One pass over a parsed document, with an explicit stack (no recursion, so it cannot itself overflow):
 * OPENAPI_TOO_DEEP when it nests deeper than MAX_DOCUMENT_DEPTH; OPENAPI_NAME_INVALID when a name (any object
 * key: paths, property names, response codes; or an `operationId` / `name` value) contains U+0000, which C
 * libraries, logs and HTTP stacks truncate or reject, so the name seen would not be the name sent.
 */
export function checkDocumentTree(value: unknown, where: string): void {
  const stack: Array<[unknown, number, string]> = [[value, 1, '']];
  while (stack.length > 0) {
    const [current, depth, pointer] = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth > MAX_DOCUMENT_DEPTH) throw tooDeep(where);
    if (Array.isArray(current)) {
      current.forEach((item, index) => {
        if (typeof item === 'object' && item !== null) stack.push([item, depth + 1, `${pointer}/${index}`]);
      });
      continue;
    }
    for (const [key, item] of Object.entries(current)) {
      if (key.includes('\u0000')) throw nameWithNul(where, pointer, key);
      const nulName = typeof item === 'string' && NAME_VALUED_KEYS.has(key) && item.includes('\u0000');
      if (!nulName && (typeof item !== 'object' || item === null)) continue;
      const at = `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (nulName) throw nameWithNul(where, at, item as string);
      stack.push([item, depth + 1, at]);
    }
  }
}

/**
 * JSON or YAML (YAML 1.2 is a superset of JSON; JSON is tried first because it is much faster), no deeper than
 * MAX_DOCUMENT_DEPTH and without NUL in names (checkDocumentTree).
 */
export function parseDocumentText(text: string, where: string): unknown {
  const value = parseDocumentTree(text, where);
  checkDocumentTree(value, where);
  return value;
}

function parseDocumentTree(text: string, where: string): unknown {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const first = body.trimStart()[0];
  // Integers beyond 2^53 are read exactly, as BigInts (exact-integers.ts); only text with a 16-digit run can
  // hold one, so every other document takes the plain parsers.
  const exact = mayHoldUnsafeIntegers(body);
  if (first === '{' || first === '[') {
    try {
      return exact ? parseJsonExact(body) : JSON.parse(body);
    } catch {
      // Fall through: the YAML parser reports the line and column of the problem.
    }
  }
  try {
    const options = { maxAliasCount: MAX_YAML_ALIAS_COUNT, prettyErrors: true, uniqueKeys: true };
    return exact ? narrowSafeBigInts(parseYaml(body, { ...options, intAsBigInt: true })) : parseYaml(body, options);
  } catch (error) {
    const message = (error as Error).message;
    // The YAML parser composes nested collections recursively: thousands of levels exhaust its stack, which it
    // reports as a parse error. That is this document's depth, not a syntax problem.
    if (error instanceof RangeError || /maximum call stack size exceeded/i.test(message)) throw tooDeep(where, error);
    if (/alias/i.test(message) && /excessive|exhaustion/i.test(message)) {
      throw new GatewayError(
        'OPENAPI_ALIAS_LIMIT',
        `${where} expands YAML aliases beyond the limit of ${MAX_YAML_ALIAS_COUNT} nodes (a "billion laughs" ` +
          'document?); it is refused.',
        { cause: error },
      );
    }
    const line = (error as { linePos?: { line: number; col: number }[] }).linePos?.[0];
    throw new GatewayError(
      'OPENAPI_PARSE_ERROR',
      `${where} is neither valid JSON nor valid YAML${line ? ` (line ${line.line}, column ${line.col})` : ''}: ` +
        `${message.split('\n')[0]}`,
      { cause: error, details: line ? { line: line.line, column: line.col } : undefined },
    );
  }
}

/** The supported version (`openapi` as written) or OPENAPI_UNSUPPORTED_VERSION naming what was found. */
export function checkOpenApiVersion(value: unknown, where: string): string {
  if (!isObject(value)) {
    throw new GatewayError('OPENAPI_INVALID', `${where} is not an OpenAPI document: its top level is not an object.`);
  }
  if ('swagger' in value) {
    throw new GatewayError(
      'OPENAPI_UNSUPPORTED_VERSION',
      `${where} is Swagger ${String(value.swagger)}; only OpenAPI 3.0, 3.1 and 3.2 are supported. ` +
        'Convert it to OpenAPI 3 first (for example with swagger2openapi).',
      { details: { version: `swagger ${String(value.swagger)}` } },
    );
  }
  const version = value.openapi;
  if (typeof version !== 'string') {
    throw new GatewayError(
      'OPENAPI_UNSUPPORTED_VERSION',
      version === undefined
        ? `${where} has no "openapi" version field; only OpenAPI 3.0, 3.1 and 3.2 are supported.`
        : `${where} declares openapi: ${JSON.stringify(version)}, which is not a version string (write e.g. "3.1.0").`,
      { details: { version: version ?? null } },
    );
  }
  // OAS 3.x §4.8.1: `openapi` is major.minor.patch; every patch release of a minor version is accepted.
  if (!/^3\.[012]\.[0-9]+(-[0-9A-Za-z.-]+)?$/.test(version)) {
    throw new GatewayError(
      'OPENAPI_UNSUPPORTED_VERSION',
      `${where} is OpenAPI ${version}; only OpenAPI 3.0.x, 3.1.x and 3.2.x are supported.`,
      { details: { version } },
    );
  }
  return version;
}

// One validator for the process: compiling the OpenAPI schemas is slow, validating is cheap (docs/performance.md).
let validator: Promise<Validator> | undefined;
type AjvValidate = ((data: unknown) => boolean) & {
  errors?: { instancePath: string; message?: string; keyword: string; params: Record<string, unknown> }[] | null;
};

/** Validates against the official schema of the document's minor version; OPENAPI_INVALID lists the first problems. */
export async function validateOpenApi(document: Record<string, unknown>, version: string, where: string): Promise<void> {
  const minor = version.slice(0, 3);
  validator ??= import('@seriousme/openapi-schema-validator').then((module) => new module.Validator());
  const validate = ((await validator) as unknown as { getAjvValidator(version: string): AjvValidate }).getAjvValidator(minor);
  // The official schemas know numbers only: an exact (BigInt) bound is validated as the double it rounds to.
  if (validate(withDoubles(document))) return;
  const problems: string[] = [];
  for (const error of validate.errors ?? []) {
    const extra = error.keyword === 'additionalProperties' ? ` ("${String(error.params.additionalProperty)}")` : '';
    const line = `${error.instancePath === '' ? '/' : error.instancePath}: ${error.message ?? 'is invalid'}${extra}`;
    if (!problems.includes(line)) problems.push(line);
    if (problems.length === 5) break;
  }
  throw new GatewayError('OPENAPI_INVALID', `${where} is not a valid OpenAPI ${minor} document: ${problems.join('; ')}`, {
    details: { problems },
  });
}

/**
 * Which kinds of references to other documents a document holds: files (relative or `file:` references of a local
 * document) and remote ones (http(s) URLs, or any reference of a document read from a URL).
 */
export function externalReferenceKinds(value: unknown, isRemoteDocument: boolean): { files: boolean; remote: boolean } {
  const kinds = { files: false, remote: false };
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (Array.isArray(current)) {
      for (const item of current) if (typeof item === 'object' && item !== null) stack.push(item);
    } else if (typeof current === 'object' && current !== null) {
      for (const [key, item] of Object.entries(current)) {
        if (key === '$ref' && typeof item === 'string' && !item.startsWith('#')) {
          if (isRemoteDocument || isUrlLocation(item)) kinds.remote = true;
          else kinds.files = true;
        } else if (typeof item === 'object' && item !== null) {
          stack.push(item);
        }
      }
    }
  }
  return kinds;
}

/**
 * RFC 6901 §6: a JSON Pointer in a URI fragment is percent-encoded. The bundler writes raw pointers such as
 * `#/paths/~1v2~1keys~1{id}/get`, which the OpenAPI schema (format `uri-reference`) rejects; re-encode them.
 */
function encodeLocalReferences(value: unknown): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current !== 'object' || current === null) continue;
    for (const [key, item] of Object.entries(current)) {
      if (key === '$ref' && typeof item === 'string' && item.startsWith('#')) {
        (current as Record<string, unknown>)[key] = `#${encodeURI(localPointerOf(item) ?? '')}`;
      } else if (typeof item === 'object' && item !== null) {
        stack.push(item);
      }
    }
  }
}

export interface BundleOptions {
  allowRemoteRefs: boolean;
  maxBytes: number;
  timeoutMs: number;
  fetchText: FetchText;
}

/**
 * Joins a multi-file document into one with only internal references (@readme/openapi-parser `bundle`). Every
 * file goes through one resolver of ours: local files must sit in the entry document's folder (or below it) and
 * count towards the size limit; URLs are refused unless remote references are allowed; YAML goes through the same
 * alias-limited parser as the entry document.
 */
export async function bundleDocument(
  root: Record<string, unknown>,
  rootLocation: string,
  where: string,
  options: BundleOptions,
): Promise<Record<string, unknown>> {
  const rootIsUrl = isUrlLocation(rootLocation);
  const rootFolder = rootIsUrl ? null : dirname(rootLocation);
  const refusedRemote: string[] = [];
  const refusedOutside: string[] = [];
  let failure: GatewayError | null = null;
  let totalBytes = 0;
  let rootFolderReal: string | undefined;

  const readReference = async (url: string): Promise<unknown> => {
    if (isUrlLocation(url)) {
      if (rootIsUrl && stripHash(url) === stripHash(rootLocation)) return root;
      if (!options.allowRemoteRefs) {
        refusedRemote.push(url);
        return {};
      }
      const text = await options.fetchText(url, { maxBytes: options.maxBytes, timeoutMs: options.timeoutMs });
      totalBytes += Buffer.byteLength(text, 'utf8');
      if (totalBytes > options.maxBytes) throw tooLarge(`${where} with the files it references`, options.maxBytes);
      return parseReferenced(text, url);
    }
    const path = toFilePath(url);
    if (rootIsUrl) {
      refusedOutside.push(url);
      return {};
    }
    if (path === rootLocation) return root;
    if (!isInside(rootFolder as string, path)) {
      refusedOutside.push(path);
      return {};
    }
    rootFolderReal ??= await realpath(rootFolder as string);
    const read = await readReferencedFile(path, rootFolderReal, options.maxBytes);
    if ('refused' in read) {
      refusedOutside.push(`${path} (${read.refused})`);
      return {};
    }
    const text = read.text;
    totalBytes += Buffer.byteLength(text, 'utf8');
    if (totalBytes > options.maxBytes) throw tooLarge(`${where} with the files it references`, options.maxBytes);
    return parseReferenced(text, path);
  };

  const resolver = {
    order: 1,
    canRead: true,
    async read(file: { url: string }): Promise<unknown> {
      try {
        return await readReference(file.url);
      } catch (error) {
        if (error instanceof GatewayError) failure ??= error;
        throw error;
      }
    },
  };

  let bundled: unknown;
  try {
    const { bundle } = await import('@readme/openapi-parser');
    bundled = await bundle(rootLocation, {
      resolve: {
        external: true,
        file: resolver as never,
        // Every read goes through our resolver; the library's own HTTP resolver never runs.
        http: { canRead: false } as never,
      },
      timeoutMs: Math.max(options.timeoutMs, 60_000),
    });
  } catch (error) {
    if (failure) throw failure;
    if (refusedRemote.length === 0 && refusedOutside.length === 0) {
      throw new GatewayError(
        'OPENAPI_REFERENCE_UNRESOLVABLE',
        `${where} references other files that cannot be joined: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
  if (refusedRemote.length > 0) {
    throw new GatewayError(
      'OPENAPI_REMOTE_REF_REFUSED',
      `${where} references remote documents (${[...new Set(refusedRemote)].slice(0, 3).join(', ')}); remote ` +
        'references are refused unless allowRemoteRefs is set for this source.',
      { details: { references: [...new Set(refusedRemote)].slice(0, 20) } },
    );
  }
  if (refusedOutside.length > 0) {
    throw new GatewayError(
      'OPENAPI_FILE_REF_REFUSED',
      `${where} references files outside its own folder or that are not regular files ` +
        `(${[...new Set(refusedOutside)].slice(0, 3).join(', ')}); only regular files beside the document or below ` +
        'its folder may be referenced, and symbolic links must stay inside it. Refused files are not read.',
      { details: { references: [...new Set(refusedOutside)].slice(0, 20) } },
    );
  }
  if (!isObject(bundled)) {
    throw new GatewayError('OPENAPI_INVALID', `${where} did not bundle into an OpenAPI document.`);
  }
  encodeLocalReferences(bundled);
  inlineMisplacedReferences(bundled);
  // Each file was within the limit; joined (and with misplaced references inlined), they may not be.
  checkDocumentTree(bundled, where);
  return bundled;
}

function isInside(folder: string, path: string): boolean {
  const inside = relative(folder, path);
  return !(inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside));
}

/**
 * Reads a file a `$ref` names, only if it really is a regular file inside the document's folder. The lexical
 * check above is not enough: `link.yaml -> ../outside.yaml` (or `-> /proc/self/environ`) names a path inside the
 * folder whose target is not. So the real path (every symbolic link resolved) is compared with the folder's real
 * path; FIFOs, devices, sockets and directories are refused (a FIFO would block the import forever); the file is
 * opened without following links and checked again on the open handle, so it cannot be swapped in between.
 * A refused file is never read, so no error can quote its content.
 */
async function readReferencedFile(path: string, rootFolderReal: string, maxBytes: number): Promise<{ text: string } | { refused: string }> {
  let real: string;
  try {
    real = await realpath(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const missing = code === 'ENOENT' || code === 'ENOTDIR';
    throw new GatewayError(
      missing ? 'OPENAPI_NOT_FOUND' : 'OPENAPI_UNREADABLE',
      missing ? `${path} does not exist (a $ref names it).` : `${path} cannot be read (${code ?? 'error'}).`,
      { cause: error },
    );
  }
  if (!isInside(rootFolderReal, real)) return { refused: 'a symbolic link to a file outside the folder' };
  const info = await stat(real);
  if (!info.isFile()) return { refused: 'not a regular file' };
  if (info.size > maxBytes) throw tooLarge(path, maxBytes);
  // O_NONBLOCK: should a FIFO appear at this path after the check, opening it must not wait for a writer.
  const handle = await open(real, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK).catch((error: unknown) => {
    throw new GatewayError('OPENAPI_UNREADABLE', `${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}).`, {
      cause: error,
    });
  });
  try {
    const opened = await handle.stat();
    if (!opened.isFile() || opened.ino !== info.ino || opened.dev !== info.dev) return { refused: 'changed while it was read' };
    if (opened.size > maxBytes) throw tooLarge(path, maxBytes);
    return { text: decodeDocumentBytes(await handle.readFile(), path) };
  } finally {
    await handle.close();
  }
}

/** Keys whose value OpenAPI never allows to be a Reference Object, but which split documents reference anyway. */
const MISPLACED_REFERENCE_KEYS = new Set(['properties', 'patternProperties', 'description', 'summary']);

/**
 * Real multi-file documents (DigitalOcean's among them) put `$ref` where neither OpenAPI nor JSON Schema allows
 * one: as a whole `properties` map, or as a `description`. Common tooling follows those references, so we do too:
 * they are replaced by their targets before validation (only in bundled documents).
 */
function inlineMisplacedReferences(document: Record<string, unknown>): void {
  const stack: unknown[] = [document];
  // Inlined targets are shallow copies sharing their children, and a `properties: {$ref}` pointing back at its
  // own schema makes the graph cyclic: each object is visited once, or such a document never finishes (the
  // depth check that follows then refuses the cycle as OPENAPI_TOO_DEEP).
  const visited = new Set<object>();
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current !== 'object' || current === null || visited.has(current)) continue;
    visited.add(current);
    for (const [key, item] of Object.entries(current)) {
      if (MISPLACED_REFERENCE_KEYS.has(key) && isReference(item)) {
        try {
          const target = resolveReference(document, item.$ref).value;
          (current as Record<string, unknown>)[key] = isObject(target) ? { ...target } : target;
        } catch {
          // Left as is: validation reports it.
        }
      }
      const value = (current as Record<string, unknown>)[key];
      if (typeof value === 'object' && value !== null) stack.push(value);
    }
  }
}

function stripHash(url: string): string {
  const index = url.indexOf('#');
  return index === -1 ? url : url.slice(0, index);
}

function toFilePath(url: string): string {
  const bare = stripHash(url);
  if (bare.startsWith('file:')) return fileURLToPath(bare);
  try {
    return resolvePath(decodeURI(bare));
  } catch {
    return resolvePath(bare);
  }
}

/** Referenced JSON/YAML files are parsed by us (alias limit); other files (e.g. Markdown) stay text. */
function parseReferenced(text: string, where: string): unknown {
  return /\.(json|ya?ml)$/i.test(where) || !/\.[a-z0-9]+$/i.test(where) ? parseDocumentText(text, where) : text;
}
