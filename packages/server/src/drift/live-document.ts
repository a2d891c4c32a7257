import { readFile, stat } from 'node:fs/promises';
import type { Dispatcher } from 'undici';
import {
  GatewayError,
  decodeDocumentBytes,
  importOpenApiText,
  resolveConfigPath,
  sha256Digest,
  type LoadedConfig,
  type Operation,
} from '@gateway/core';
import { DOCUMENT_MAX_REDIRECTS, guardedDocumentFetcher, guardedFetchText } from '@gateway/runtime';

/** A live description as last read and normalised. */
export interface LiveDocument {
  /** sha256 of the bytes read (skips re-normalising an unchanged document). */
  bytesDigest: string;
  /** The importer's document digest (the proposal's identity). */
  documentDigest: string;
  operations: Operation[];
  etag: string | null;
  lastModified: string | null;
}

/** What reading a description needs: the config (relative paths, import limits) and the SSRF-guarded agent. */
export interface DocumentReading {
  loaded: LoadedConfig;
  agent: Dispatcher;
  maxBytes: number;
  timeoutMs: number;
}

interface ReadText {
  /** Null: a 304 to a conditional request (the document in memory is still the live one). */
  text: string | null;
  etag: string | null;
  lastModified: string | null;
}

/** An OpenAPI source as gateway.yaml configures it. */
export type OpenApiSourceSettings = Extract<LoadedConfig['config']['sources'][string], { kind: 'openapi' }>;

const URL_LOCATION = /^https?:\/\//i;

/**
 * Reads the description a source names. URL documents are fetched through the SSRF guard with conditional requests
 * (RFC 9110 §13.1: If-None-Match, If-Modified-Since) when `previous` is in memory to fall back on; files are re-read.
 */
export async function readDocument(reading: DocumentReading, location: string, previous: LiveDocument | undefined): Promise<ReadText> {
  const { maxBytes } = reading;
  if (URL_LOCATION.test(location)) {
    const headers: Record<string, string> = {};
    if (previous?.etag) headers['if-none-match'] = previous.etag;
    if (previous?.lastModified) headers['if-modified-since'] = previous.lastModified;
    // The same redirect rule as the CLI's import (guardedDocumentFetcher): each hop passes the guard again.
    const fetched = await guardedFetchText(location, {
      agent: reading.agent,
      maxBytes,
      timeoutMs: reading.timeoutMs,
      headers,
      maxRedirects: DOCUMENT_MAX_REDIRECTS,
    });
    if (fetched.status === 304 && previous) return { text: null, etag: previous.etag, lastModified: previous.lastModified };
    if (fetched.status < 200 || fetched.status > 299) {
      throw new GatewayError('DRIFT_DOCUMENT_UNAVAILABLE', `${location} answered HTTP ${fetched.status}`);
    }
    return {
      text: decodeDocumentBytes(fetched.bytes, location),
      etag: fetched.headers.etag ?? null,
      lastModified: fetched.headers['last-modified'] ?? null,
    };
  }
  const path = resolveConfigPath(reading.loaded, location);
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (error) {
    throw new GatewayError(
      'DRIFT_DOCUMENT_UNREADABLE',
      `cannot read ${location}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  if (size > maxBytes) {
    throw new GatewayError('FETCH_RESPONSE_TOO_LARGE', `${location} is larger than ${maxBytes} bytes`);
  }
  return { text: decodeDocumentBytes(await readFile(path), location), etag: null, lastModified: null };
}

/** Normalises a description's text as `gateway import` does, with the same document fetcher for remote `$ref`s. */
export async function normaliseDocument(
  reading: DocumentReading,
  settings: OpenApiSourceSettings,
  text: string,
  read: { etag: string | null; lastModified: string | null },
): Promise<LiveDocument> {
  const imported = await importOpenApiText(text, settings.document, {
    baseDirectory: reading.loaded.directory,
    allowRemoteRefs: settings.allowRemoteRefs ?? false,
    ...(settings.server === undefined ? {} : { server: settings.server }),
    maxDocumentBytes: reading.maxBytes,
    timeoutMs: reading.timeoutMs,
    // Remote $refs: the one document fetcher the CLI injects too, so both decide alike on every URL.
    fetchText: guardedDocumentFetcher(reading.agent),
  });
  return { bytesDigest: sha256Digest(text), documentDigest: imported.documentDigest, operations: imported.operations, ...read };
}

/** The live document after a read: the one in memory when the bytes are the same, else the text normalised again. */
export async function liveDocumentAfter(
  reading: DocumentReading,
  settings: OpenApiSourceSettings,
  previous: LiveDocument | undefined,
  read: ReadText,
): Promise<LiveDocument | undefined> {
  if (read.text === null) return previous;
  if (previous?.bytesDigest === sha256Digest(read.text)) return { ...previous, etag: read.etag, lastModified: read.lastModified };
  return normaliseDocument(reading, settings, read.text, read);
}
