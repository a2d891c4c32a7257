import { request, type Dispatcher } from 'undici';
import { GatewayError } from '@gateway/core';
import { findSsrfRefusal } from './agent.js';

export interface GuardedFetchOptions {
  /** The guarded agent (createGuardedAgent): every hop connects through it. */
  agent: Dispatcher;
  /** Refuse a body larger than this many bytes (checked on Content-Length and while streaming). */
  maxBytes: number;
  /** Total time for the whole exchange, redirects included. */
  timeoutMs: number;
  headers?: Record<string, string>;
  /** Redirect hops followed (default 5); each hop is checked by the agent again. */
  maxRedirects?: number;
}

export interface FetchedText {
  status: number;
  text: string;
  /** The body as received, for callers that must refuse bytes that are not UTF-8 instead of replacing them. */
  bytes: Buffer;
  /** Response headers, lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** The URL finally answered (after redirects). */
  url: string;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * GETs a text document (an OpenAPI description) through the SSRF guard. 304 and other statuses are
 * returned, not thrown, so conditional requests (RFC 9110 §13.1) can be answered by the caller.
 * Throws FETCH_RESPONSE_TOO_LARGE, FETCH_TIMEOUT, FETCH_FAILED, FETCH_REDIRECT_REFUSED or SSRF_ADDRESS_REFUSED.
 */
export async function guardedFetchText(url: string, options: GuardedFetchOptions): Promise<FetchedText> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  const maxRedirects = options.maxRedirects ?? 5;
  let current = checkedUrl(url);
  for (let hop = 0; ; hop += 1) {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(current, {
        method: 'GET',
        dispatcher: options.agent,
        headers: { accept: 'application/json, application/yaml, text/yaml, */*;q=0.5', ...options.headers },
        signal,
      });
    } catch (error) {
      throw fetchError(error, current, signal, options.timeoutMs);
    }
    const headers = flattenHeaders(response.headers);
    if (REDIRECT_STATUSES.has(response.statusCode) && headers.location) {
      await response.body.dump().catch(() => undefined);
      if (hop >= maxRedirects) {
        throw new GatewayError('FETCH_TOO_MANY_REDIRECTS', `${url}: more than ${maxRedirects} redirects`);
      }
      current = checkedUrl(new URL(headers.location, current).toString());
      continue;
    }
    const declared = Number(headers['content-length']);
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      response.body.destroy();
      throw tooLarge(current, options.maxBytes);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of response.body) {
        size += (chunk as Buffer).length;
        if (size > options.maxBytes) {
          response.body.destroy();
          throw tooLarge(current, options.maxBytes);
        }
        chunks.push(chunk as Buffer);
      }
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      throw fetchError(error, current, signal, options.timeoutMs);
    }
    const bytes = Buffer.concat(chunks);
    return { status: response.statusCode, text: bytes.toString('utf8'), bytes, headers, url: current };
  }
}

function checkedUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new GatewayError('FETCH_FAILED', `not an absolute URL: ${url}`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new GatewayError('FETCH_REDIRECT_REFUSED', `${url}: only http and https URLs are fetched`);
  }
  return parsed.toString();
}

function tooLarge(url: string, maxBytes: number): GatewayError {
  return new GatewayError('FETCH_RESPONSE_TOO_LARGE', `${url}: the response is larger than ${maxBytes} bytes`, {
    details: { maxBytes },
  });
}

function fetchError(error: unknown, url: string, signal: AbortSignal, timeoutMs: number): GatewayError {
  const refusal = findSsrfRefusal(error);
  if (refusal) return refusal;
  if (signal.aborted) {
    return new GatewayError('FETCH_TIMEOUT', `${url}: no complete answer within ${timeoutMs} ms`);
  }
  const code = (error as { code?: string })?.code;
  return new GatewayError('FETCH_FAILED', `${url}: ${(error as Error)?.message ?? String(error)}${code ? ` (${code})` : ''}`, {
    cause: error,
  });
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}
