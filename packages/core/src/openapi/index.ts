/**
 * The OpenAPI importer: a document (file or URL) → every operation normalised into `Operation` (model.ts).
 * docs/lockfile.md documents the rules (tool names, argument mapping, reason codes, fingerprint, limits).
 */
import { resolve as resolvePath } from 'node:path';
import { canonicalDigest, sha256Digest } from '../canonical.js';
import type { Operation, ServerOverride } from '../model.js';
import {
  DEFAULT_FETCH_TIMEOUT_MS,
  DEFAULT_MAX_DOCUMENT_BYTES,
  bundleDocument,
  checkDocumentSize,
  checkOpenApiVersion,
  noFetcher,
  externalReferenceKinds,
  isUrlLocation,
  parseDocumentText,
  readDocumentFile,
  validateOpenApi,
  type FetchText,
} from './load.js';
import { normaliseDocument } from './normalise.js';

export {
  DEFAULT_MAX_DOCUMENT_BYTES,
  MAX_DOCUMENT_DEPTH,
  MAX_YAML_ALIAS_COUNT,
  decodeDocumentBytes,
  parseDocumentText,
  type FetchText,
} from './load.js';
export { fingerprintOf, chooseRequestMediaType } from './normalise.js';
export { UNSUPPORTED_REASON_CODES, type UnsupportedReasonCode } from './reasons.js';
export { TOOL_NAME_PATTERN } from './tool-names.js';

export interface ImportOptions {
  /** Directory relative file locations are resolved against (the config's directory). */
  baseDirectory: string;
  /** `sources.<name>.server`: replaces the document's servers (a URL) or sets its server variables. */
  server?: ServerOverride;
  /** Allow $refs to other URLs (remote refs). Default false: refused with OPENAPI_REMOTE_REF_REFUSED. */
  allowRemoteRefs?: boolean;
  /** Refuse documents larger than this many bytes. Default DEFAULT_MAX_DOCUMENT_BYTES = 25 MiB. */
  maxDocumentBytes?: number;
  /** Timeout for fetching URL documents. Default 15000. */
  timeoutMs?: number;
  /**
   * How to fetch a URL: the CLI and the server both inject @gateway/runtime's SSRF-guarded document fetcher.
   * Core has no network code; without a fetcher a URL fails with OPENAPI_FETCHER_MISSING.
   */
  fetchText?: (url: string, limits: { maxBytes: number; timeoutMs: number }) => Promise<string>;
}

export interface ImportedDocument {
  /** The `openapi` field as written, e.g. "3.2.0". */
  openapiVersion: string;
  /** sha256:<hex> of the entry document's bytes (for multi-file documents: canonical digest of the bundled document). */
  documentDigest: string;
  /** Every operation, sorted by path then method, tool names unique. */
  operations: Operation[];
}

function settings(options: ImportOptions): { maxBytes: number; timeoutMs: number; fetchText: FetchText } {
  return {
    maxBytes: options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES,
    timeoutMs: options.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS,
    fetchText: options.fetchText ?? noFetcher,
  };
}

/** location = a file path (relative to baseDirectory) or an http(s) URL. */
export async function importOpenApi(location: string, options: ImportOptions): Promise<ImportedDocument> {
  const { maxBytes, timeoutMs, fetchText } = settings(options);
  const text = isUrlLocation(location)
    ? await fetchText(location, { maxBytes, timeoutMs })
    : await readDocumentFile(resolvePath(options.baseDirectory, location), location, maxBytes);
  return importOpenApiText(text, location, options);
}

/** Same, from text already fetched (the server's drift watcher does conditional requests itself). */
export async function importOpenApiText(text: string, location: string, options: ImportOptions): Promise<ImportedDocument> {
  const { maxBytes, timeoutMs, fetchText } = settings(options);
  checkDocumentSize(text, location, maxBytes);
  const parsed = parseDocumentText(text, location);
  const openapiVersion = checkOpenApiVersion(parsed, location);
  let document = parsed as Record<string, unknown>;
  let documentDigest = sha256Digest(text);
  const allowRemoteRefs = options.allowRemoteRefs ?? false;
  const external = externalReferenceKinds(document, isUrlLocation(location));
  // Remote references that are not allowed are left in place: only an operation that needs one fails the import
  // (OPENAPI_REMOTE_REF_REFUSED); in a multi-file document any remote reference fails it (see load.ts).
  if (external.files || (external.remote && allowRemoteRefs)) {
    const rootLocation = isUrlLocation(location) ? location : resolvePath(options.baseDirectory, location);
    document = await bundleDocument(document, rootLocation, location, {
      allowRemoteRefs,
      maxBytes,
      timeoutMs,
      fetchText,
    });
    documentDigest = canonicalDigest(document);
  }
  await validateOpenApi(document, openapiVersion, location);
  const operations = normaliseDocument(document, {
    openapiVersion,
    documentUrl: isUrlLocation(location) ? location : null,
    ...(options.server === undefined ? {} : { server: options.server }),
  });
  return { openapiVersion, documentDigest, operations };
}
