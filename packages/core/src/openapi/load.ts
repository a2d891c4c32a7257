/**
 * Reading an OpenAPI document: from a file or an http(s) URL, within a size limit, JSON or YAML (with a cap on YAML
 * aliases), version checked (3.0.x, 3.1.x, 3.2.x), bundled when it references other files, and validated against
 * the official OpenAPI JSON Schemas.
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundle } from '@readme/openapi-parser';
import { Validator } from '@seriousme/openapi-schema-validator';
import { parse as parseYaml } from 'yaml';
import { GatewayError } from '../errors.js';
import { isObject, isReference, localPointerOf, resolveReference } from './references.js';

/** Documents (and, for multi-file documents, all their files together) larger than this are refused. */
export const DEFAULT_MAX_DOCUMENT_BYTES = 25 * 1024 * 1024;
export const DEFAULT_FETCH_TIMEOUT_MS = 15_000;
/**
 * YAML aliases expanded per document at most (the `yaml` package counts the nodes an alias expands to). Real
 * descriptions rarely use aliases; "billion laughs" documents need millions.
 */
export const MAX_YAML_ALIAS_COUNT = 100;

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

/** Default URL reader: global fetch, a timeout, and a byte limit enforced while reading (not just Content-Length). */
export const fetchTextWithLimits: FetchText = async (url, limits) => {
  let response: Response;
  try {
    response = await fetch(url, {
      signal: AbortSignal.timeout(limits.timeoutMs),
      redirect: 'follow',
      headers: { accept: 'application/json, application/yaml, text/yaml, */*;q=0.5' },
    });
  } catch (error) {
    const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${limits.timeoutMs} ms` : describeFetchError(error);
    throw new GatewayError('OPENAPI_UNREACHABLE', `${url} could not be fetched: ${reason}.`, {
      cause: error,
    });
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    throw new GatewayError('OPENAPI_UNREACHABLE', `${url} answered HTTP ${response.status}, not a document.`, {
      details: { status: response.status },
    });
  }
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limits.maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge(url, limits.maxBytes);
  }
  const chunks: Uint8Array[] = [];
  let received = 0;
  try {
    const reader = response.body?.getReader();
    for (;;) {
      if (!reader) break;
      const { done, value } = await reader.read();
      if (done) break;
      received += value.byteLength;
      if (received > limits.maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge(url, limits.maxBytes);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    throw new GatewayError('OPENAPI_UNREACHABLE', `${url} could not be read: ${describeFetchError(error)}.`, {
      cause: error,
    });
  }
  return Buffer.concat(chunks).toString('utf8');
};

function describeFetchError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
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
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new GatewayError('OPENAPI_UNREADABLE', `${where} cannot be read: ${(error as Error).message}.`, {
      cause: error,
    });
  }
}

/** JSON or YAML (YAML 1.2 is a superset of JSON; JSON is tried first because it is much faster). */
export function parseDocumentText(text: string, where: string): unknown {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const first = body.trimStart()[0];
  if (first === '{' || first === '[') {
    try {
      return JSON.parse(body);
    } catch {
      // Fall through: the YAML parser reports the line and column of the problem.
    }
  }
  try {
    return parseYaml(body, { maxAliasCount: MAX_YAML_ALIAS_COUNT, prettyErrors: true, uniqueKeys: true });
  } catch (error) {
    const message = (error as Error).message;
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

// One validator for the process: compiling the OpenAPI schemas costs ~100 ms per version, validating is cheap.
const validator = new Validator();
type AjvValidate = ((data: unknown) => boolean) & {
  errors?: { instancePath: string; message?: string; keyword: string; params: Record<string, unknown> }[] | null;
};

/** Validates against the official schema of the document's minor version; OPENAPI_INVALID lists the first problems. */
export function validateOpenApi(document: Record<string, unknown>, version: string, where: string): void {
  const minor = version.slice(0, 3);
  const validate = (validator as unknown as { getAjvValidator(version: string): AjvValidate }).getAjvValidator(minor);
  if (validate(document)) return;
  const problems: string[] = [];
  for (const error of validate.errors ?? []) {
    const extra =
      error.keyword === 'additionalProperties' ? ` ("${String(error.params.additionalProperty)}")` : '';
    const line = `${error.instancePath === '' ? '/' : error.instancePath}: ${error.message ?? 'is invalid'}${extra}`;
    if (!problems.includes(line)) problems.push(line);
    if (problems.length === 5) break;
  }
  throw new GatewayError(
    'OPENAPI_INVALID',
    `${where} is not a valid OpenAPI ${minor} document: ${problems.join('; ')}`,
    { details: { problems } },
  );
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
    const inside = relative(rootFolder as string, path);
    if (inside.startsWith('..') || isAbsolute(inside)) {
      refusedOutside.push(path);
      return {};
    }
    const text = await readDocumentFile(path, path, options.maxBytes);
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
      `${where} references files outside its own folder (${[...new Set(refusedOutside)].slice(0, 3).join(', ')}); ` +
        'only files beside the document or below its folder may be referenced.',
      { details: { references: [...new Set(refusedOutside)].slice(0, 20) } },
    );
  }
  if (!isObject(bundled)) {
    throw new GatewayError('OPENAPI_INVALID', `${where} did not bundle into an OpenAPI document.`);
  }
  encodeLocalReferences(bundled);
  inlineMisplacedReferences(bundled);
  return bundled;
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
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current !== 'object' || current === null) continue;
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
