import type { Dispatcher } from 'undici';
import { GatewayError, decodeDocumentBytes } from '@gateway/core';
import { guardedFetchText } from './fetch-text.js';

/**
 * Redirect hops followed when fetching an OpenAPI description or a remote `$ref`, by the CLI (import, diff,
 * publish) and the server (drift watcher) alike. Every hop is a new connection through the guarded agent.
 */
export const DOCUMENT_MAX_REDIRECTS = 5;

/** What core's importer calls to read a URL (core's `FetchText`). */
export type DocumentFetcher = (url: string, limits: { maxBytes: number; timeoutMs: number }) => Promise<string>;

/**
 * The one way an OpenAPI description or a remote `$ref` is read from a URL, injected into core's importer by
 * both the CLI and the server, so the two make the same decision on every URL: the SSRF guard of `agent`
 * (checked on the address actually connected to, on every redirect hop), the same redirect rule, the same
 * limits, and a body that must be UTF-8. Anything but a 2xx answer is OPENAPI_UNREACHABLE.
 */
export function guardedDocumentFetcher(agent: Dispatcher): DocumentFetcher {
  return async (url, limits) => {
    let fetched: Awaited<ReturnType<typeof guardedFetchText>>;
    try {
      fetched = await guardedFetchText(url, {
        agent,
        maxBytes: limits.maxBytes,
        timeoutMs: limits.timeoutMs,
        maxRedirects: DOCUMENT_MAX_REDIRECTS,
      });
    } catch (error) {
      // A refusal keeps its own code (SSRF_ADDRESS_REFUSED, FETCH_REDIRECT_REFUSED); a host that cannot be reached
      // and a document over the limit keep the importer's codes, as for files.
      if (error instanceof GatewayError && error.code === 'FETCH_RESPONSE_TOO_LARGE') {
        throw new GatewayError(
          'OPENAPI_TOO_LARGE',
          `${url} is larger than the limit of ${limits.maxBytes} bytes; raise import.maxDocumentBytes in gateway.yaml ` +
            'if the document is genuine.',
          { details: { maxBytes: limits.maxBytes }, cause: error },
        );
      }
      if (error instanceof GatewayError && (error.code === 'FETCH_FAILED' || error.code === 'FETCH_TIMEOUT')) {
        throw new GatewayError('OPENAPI_UNREACHABLE', `${url} could not be fetched: ${error.message}`, {
          cause: error,
        });
      }
      throw error;
    }
    if (fetched.status < 200 || fetched.status > 299) {
      throw new GatewayError('OPENAPI_UNREACHABLE', `${url} answered HTTP ${fetched.status}, not a document.`, {
        details: { status: fetched.status },
      });
    }
    return decodeDocumentBytes(fetched.bytes, url);
  };
}
