import { GatewayError } from '@gateway/core';
import { createGuardedAgent, guardedFetchText, type FetchedText } from '@gateway/runtime';
import { classifyRedirectUri } from './redirect-uris.js';

/**
 * Client ID Metadata Documents (MCP 2026-07-28 › Client Registration; draft-ietf-oauth-client-id-metadata-document):
 * a `client_id` that is an https URL names a JSON document the client hosts. We fetch it through the SSRF
 * guard, limit size and time, honour its HTTP caching within bounds, and trust only what it says.
 */
export interface ClientMetadataDocument {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  clientUri?: string;
}

export interface ClientMetadataFetcherOptions {
  allowPrivateNetworks: readonly string[];
  /** Extra PEM certificates trusted besides the system roots (an internal CA; tests). */
  caCertificates: readonly string[];
  maxBytes: number;
  timeoutMs: number;
  maxCacheSeconds: number;
  /** Without caching headers, keep a document this long (a bounded heuristic, RFC 9111 §4.2.2). */
  defaultCacheSeconds?: number;
  maxCacheEntries?: number;
}

/** Is this client_id a metadata document URL (https, with a path, nothing ambiguous)? */
export function isClientMetadataUrl(clientId: string): boolean {
  return clientId.startsWith('https://');
}

function checkClientIdUrl(clientId: string): URL {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw invalidDocument(clientId, 'the client_id is not a valid URL');
  }
  // The CIMD draft: https, a path component, no fragment, no credentials, no dot segments.
  if (url.protocol !== 'https:') throw invalidDocument(clientId, 'a URL client_id must use https');
  if (url.pathname === '/' || url.pathname === '') throw invalidDocument(clientId, 'a URL client_id must have a path');
  if (url.hash || clientId.includes('#')) throw invalidDocument(clientId, 'a URL client_id must not have a fragment');
  if (url.username || url.password) throw invalidDocument(clientId, 'a URL client_id must not carry credentials');
  if (/\/\.\.?(\/|$)/.test(clientId.replace(/^https:\/\/[^/]+/, '')))
    throw invalidDocument(clientId, 'a URL client_id must not contain dot segments');
  return url;
}

function invalidDocument(clientId: string, reason: string): GatewayError {
  return new GatewayError('CLIENT_METADATA_INVALID', `client metadata document ${clientId}: ${reason}`, {
    details: { clientId },
  });
}

/** Seconds this response may be reused: `max-age` capped, `no-store`/`no-cache` → 0 (RFC 9111 §5.2.2). */
export function cacheSeconds(headers: Record<string, string>, maxSeconds: number, defaultSeconds: number): number {
  const control = (headers['cache-control'] ?? '').toLowerCase();
  if (/(^|[\s,])(no-store|no-cache|private)([\s,=]|$)/.test(control)) return 0;
  const maxAge = /(?:^|[\s,])max-age\s*=\s*"?(\d+)"?/.exec(control);
  if (maxAge) return Math.min(Number(maxAge[1]), maxSeconds);
  const expires = headers.expires ? Date.parse(headers.expires) : Number.NaN;
  if (Number.isFinite(expires)) return Math.max(0, Math.min(Math.floor((expires - Date.now()) / 1000), maxSeconds));
  return Math.min(defaultSeconds, maxSeconds);
}

/** Validates a fetched document against the URL it was fetched from. */
export function parseClientMetadataDocument(clientId: string, text: string): ClientMetadataDocument {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidDocument(clientId, 'the document is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalidDocument(clientId, 'the document is not a JSON object');
  const document = value as Record<string, unknown>;
  // The document's client_id MUST equal the URL it was fetched from, exactly.
  if (document.client_id !== clientId)
    throw invalidDocument(clientId, `its client_id (${JSON.stringify(document.client_id)}) is not the URL it was fetched from`);
  if (typeof document.client_name !== 'string' || document.client_name.trim() === '')
    throw invalidDocument(clientId, 'client_name is required');
  const redirectUris = document.redirect_uris;
  if (!Array.isArray(redirectUris) || redirectUris.length === 0 || !redirectUris.every((uri) => typeof uri === 'string')) {
    throw invalidDocument(clientId, 'redirect_uris must be a non-empty array of strings');
  }
  for (const uri of redirectUris as string[]) {
    const classified = classifyRedirectUri(uri);
    if ('problem' in classified) throw invalidDocument(clientId, `redirect URI ${classified.problem}`);
  }
  // Shared secrets cannot be published in a public document (CIMD draft §4.1).
  const method = document.token_endpoint_auth_method ?? 'none';
  if (method !== 'none')
    throw invalidDocument(clientId, `token_endpoint_auth_method '${String(method)}' is not supported here; use 'none'`);
  return {
    clientId,
    clientName: document.client_name.trim().slice(0, 200),
    redirectUris: redirectUris as string[],
    ...(typeof document.client_uri === 'string' ? { clientUri: document.client_uri } : {}),
  };
}

export interface ClientMetadataFetcher {
  resolve(clientId: string): Promise<ClientMetadataDocument>;
  close(): Promise<void>;
}

export function createClientMetadataFetcher(options: ClientMetadataFetcherOptions): ClientMetadataFetcher {
  // The one SSRF guard of @gateway/runtime; extra CAs only add trust anchors, never change the address checks.
  const agent = createGuardedAgent({
    allowPrivateNetworks: options.allowPrivateNetworks,
    connectTimeoutMs: options.timeoutMs,
    ca: options.caCertificates,
  });
  const cache = new Map<string, { document: ClientMetadataDocument; expiresAt: number }>();
  const inFlight = new Map<string, Promise<ClientMetadataDocument>>();
  const maxEntries = options.maxCacheEntries ?? 1000;

  async function fetchDocument(clientId: string): Promise<ClientMetadataDocument> {
    checkClientIdUrl(clientId);
    let response: FetchedText;
    try {
      response = await guardedFetchText(clientId, {
        agent,
        maxBytes: options.maxBytes,
        timeoutMs: options.timeoutMs,
        headers: { accept: 'application/json' },
        // The document must be served at the client_id URL itself.
        maxRedirects: 0,
      });
    } catch (error) {
      const reason = error instanceof GatewayError ? error.message : String(error);
      throw new GatewayError('CLIENT_METADATA_UNAVAILABLE', `client metadata document ${clientId} could not be fetched: ${reason}`, {
        details: { clientId },
        cause: error,
      });
    }
    if (response.status !== 200) throw invalidDocument(clientId, `the server answered HTTP ${response.status}`);
    const document = parseClientMetadataDocument(clientId, response.text);
    const seconds = cacheSeconds(response.headers, options.maxCacheSeconds, options.defaultCacheSeconds ?? 300);
    if (seconds > 0) {
      if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
      cache.set(clientId, { document, expiresAt: Date.now() + seconds * 1000 });
    }
    return document;
  }

  return {
    async resolve(clientId) {
      const cached = cache.get(clientId);
      if (cached && cached.expiresAt > Date.now()) return cached.document;
      cache.delete(clientId);
      // Concurrent /authorize requests for one client share one fetch.
      let pending = inFlight.get(clientId);
      if (!pending) {
        pending = fetchDocument(clientId).finally(() => inFlight.delete(clientId));
        inFlight.set(clientId, pending);
      }
      return pending;
    },
    async close() {
      await agent.close().catch(() => undefined);
    },
  };
}
