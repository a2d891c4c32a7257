/**
 * The OAuth 2.0 client credentials grant (RFC 6749 §4.4), the one way the gateway obtains a token for itself:
 * the server's OpenAPI credentials and the MCP client's HTTP sources both come here. The request is made by
 * oauth4webapi through the SSRF-guarded agent the caller passes; a cache keeps each token until shortly before
 * it expires and shares one request among concurrent callers.
 */
import * as oauth from 'oauth4webapi';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import { GatewayError, isLoopbackHostname } from '@gateway/core';
import { findSsrfRefusal } from '../network/agent.js';

export interface ClientCredentialsRequest {
  tokenUrl: string;
  clientId: string;
  /** Read only when a token is requested (not when a cached one is used). */
  clientSecret: () => Promise<string>;
  scopes: readonly string[];
  /** Who asks, for error messages and details (a login id such as `api/machine`, or `source 'remote'`). */
  requester: string;
  /** The SSRF-guarded agent the token request goes through. */
  dispatcher?: Dispatcher;
}

export interface ClientCredentialsToken {
  accessToken: string;
  /** When to stop using it (ms since epoch): shortly before the server's expiry. */
  refreshAt: number;
}

/** Used when the token response carries no `expires_in` (RFC 6749 §5.1 makes it only RECOMMENDED). */
export const DEFAULT_TOKEN_LIFETIME_MS = 5 * 60_000;
const TOKEN_REQUEST_TIMEOUT_MS = 10_000;

/**
 * One token request, uncached. Throws OAUTH_TOKEN_REQUEST_FAILED (refused, or not a bearer token),
 * OAUTH_TOKEN_ENDPOINT_UNREACHABLE, or the SSRF guard's refusal.
 */
export async function requestClientCredentialsToken(
  request: ClientCredentialsRequest,
  now: () => number = Date.now,
): Promise<ClientCredentialsToken> {
  const { tokenUrl, requester, dispatcher } = request;
  const clientSecret = await request.clientSecret();
  const url = new URL(tokenUrl);
  const authorizationServer: oauth.AuthorizationServer = { issuer: url.origin, token_endpoint: tokenUrl };
  const client: oauth.Client = { client_id: request.clientId };
  const parameters = new URLSearchParams();
  if (request.scopes.length > 0) parameters.set('scope', request.scopes.join(' '));
  // oauth4webapi refuses plain http (RFC 9700 §2.6); loopback token endpoints are allowed, as for gateway.url.
  const isInsecureAllowed = url.protocol === 'http:' && isLoopbackHostname(url.hostname);
  const requestOptions: oauth.ClientCredentialsGrantRequestOptions = {
    ...(isInsecureAllowed ? { [oauth.allowInsecureRequests]: true } : {}),
    ...(dispatcher
      ? {
          [oauth.customFetch]: ((input: string, init: RequestInit) =>
            undiciFetch(input, { ...(init as object), dispatcher } as Parameters<typeof undiciFetch>[1])) as unknown as typeof fetch,
        }
      : {}),
    signal: AbortSignal.timeout(TOKEN_REQUEST_TIMEOUT_MS),
  };
  const started = now();
  let result: oauth.TokenEndpointResponse;
  try {
    const response = await oauth.clientCredentialsGrantRequest(
      authorizationServer,
      client,
      // RFC 6749 §2.3.1: servers MUST support HTTP Basic client authentication.
      oauth.ClientSecretBasic(clientSecret),
      parameters,
      requestOptions,
    );
    result = await oauth.processClientCredentialsResponse(authorizationServer, client, response, {
      ...(isInsecureAllowed ? { [oauth.allowInsecureRequests]: true } : {}),
    } as oauth.ProcessTokenResponseOptions);
  } catch (error) {
    const refusal = findSsrfRefusal(error);
    if (refusal) throw refusal;
    if (error instanceof oauth.ResponseBodyError) {
      throw new GatewayError(
        'OAUTH_TOKEN_REQUEST_FAILED',
        `the token endpoint ${tokenUrl} refused the client credentials of ${requester}: ${error.error} (HTTP ${error.status})`,
        { details: { login: requester, error: error.error } },
      );
    }
    if (error instanceof oauth.UnsupportedOperationError || error instanceof oauth.OperationProcessingError) {
      // The endpoint answered, with a token response the grant cannot use (an unknown token_type, a missing field).
      throw new GatewayError(
        'OAUTH_TOKEN_REQUEST_FAILED',
        `the token endpoint ${tokenUrl} gave ${requester} a token response that cannot be used: ${error.message}`,
        { details: { login: requester } },
      );
    }
    throw new GatewayError('OAUTH_TOKEN_ENDPOINT_UNREACHABLE', `no token from ${tokenUrl} for ${requester}: ${(error as Error).message}`, {
      details: { login: requester },
    });
  }
  if (result.token_type.toLowerCase() !== 'bearer') {
    throw new GatewayError(
      'OAUTH_TOKEN_REQUEST_FAILED',
      `the token endpoint ${tokenUrl} issued a '${result.token_type}' token for ${requester}; only bearer tokens are supported`,
      { details: { login: requester } },
    );
  }
  const lifetime = typeof result.expires_in === 'number' && result.expires_in > 0 ? result.expires_in * 1000 : DEFAULT_TOKEN_LIFETIME_MS;
  // Stop using a token shortly before it expires (a tenth of its life, at most 30 s) so it never
  // expires in flight. The clock starts when the request was sent: the conservative side.
  const margin = Math.min(30_000, lifetime / 10);
  return { accessToken: result.access_token, refreshAt: started + lifetime - margin };
}

export interface ClientCredentialsGrant {
  /** A token for the request: the cached one while it is fresh, else a new one (one request in flight per key). */
  token(request: ClientCredentialsRequest): Promise<string>;
  /** Drops the cached tokens of a requester (e.g. after the upstream answered 401). */
  forget(requester: string): void;
}

/** A client credentials grant with its token cache (per requester, token endpoint, client and scopes). */
export function createClientCredentialsGrant(options: { now?: () => number } = {}): ClientCredentialsGrant {
  const now = options.now ?? Date.now;
  const tokens = new Map<string, ClientCredentialsToken | Promise<ClientCredentialsToken>>();
  const keyOf = (request: ClientCredentialsRequest): string =>
    JSON.stringify([request.requester, request.tokenUrl, request.clientId, [...request.scopes].sort()]);

  return {
    async token(request) {
      const cacheKey = keyOf(request);
      const cached = tokens.get(cacheKey);
      if (cached) {
        const token = await cached;
        if (now() < token.refreshAt) return token.accessToken;
        if (tokens.get(cacheKey) === cached) tokens.delete(cacheKey);
      }
      // One request in flight per key: concurrent calls share it instead of each asking for a token.
      const pending = requestClientCredentialsToken(request, now);
      tokens.set(cacheKey, pending);
      try {
        const token = await pending;
        tokens.set(cacheKey, token);
        return token.accessToken;
      } catch (error) {
        tokens.delete(cacheKey);
        throw error;
      }
    },
    forget(requester) {
      for (const key of [...tokens.keys()]) if ((JSON.parse(key) as string[])[0] === requester) tokens.delete(key);
    },
  };
}
