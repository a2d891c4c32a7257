/**
 * The OAuth 2.0 authorization code grant as a client (RFC 6749 §4.1, with the rules of RFC 9700), the way a
 * person links their own account at a provider for a per-person login (`oauthPerson`): the provider found by
 * RFC 8414 or OpenID discovery (or given by its endpoint URLs), PKCE S256 (RFC 7636), `state`, the `iss` check of
 * RFC 9207 (oauth4webapi's `validateAuthResponse` requires `iss` when the provider says it sends one), the
 * resource indicator of RFC 8707, and refresh. Every request is made by oauth4webapi through the SSRF-guarded
 * agent the caller passes; plain http only for a provider on this machine (development, tests).
 */
import * as oauth from 'oauth4webapi';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import { GatewayError, isLoopbackHostname } from '@gateway/core';
import { findSsrfRefusal } from '../network/agent.js';
import { DEFAULT_TOKEN_LIFETIME_MS } from './client-credentials.js';

export interface AuthorizationCodeProvider {
  /** The provider's issuer identifier (discovery); or both endpoint URLs below. */
  issuer?: string;
  authorizationUrl?: string;
  tokenUrl?: string;
  clientId: string;
  scopes: readonly string[];
  /** RFC 8707: the API the tokens are for, sent in the authorization request and in every token request. */
  resource?: string;
}

export interface AuthorizationCodeClientOptions {
  /** Read only when the token endpoint is called. */
  clientSecret: () => Promise<string>;
  /** Who asks, for messages (a login id such as `orders/oauth`). */
  requester: string;
  dispatcher?: Dispatcher;
  now?: () => number;
}

/** What a token response gave: never logged, stored only in the vault. */
export interface PersonTokenSet {
  accessToken: string;
  /** Absent when the provider issued none (the person links again when the access token expires). */
  refreshToken?: string;
  /** Epoch ms at which the provider says the access token expires. */
  expiresAt: number;
  /** The granted scope, when the provider said (RFC 6749 §5.1), else the requested one. */
  scope: string;
}

export interface AuthorizationCodeClient {
  /** The provider's authorization endpoint (discovered once), where a person is sent to link. */
  authorizationEndpoint(): Promise<string>;
  /** The provider's authorization URL for one attempt (the caller keeps state, nonce and verifier). */
  authorizationUrl(attempt: { redirectUri: string; state: string; nonce: string; codeVerifier: string }): Promise<string>;
  /**
   * Checks the callback (state, `iss`, error) and redeems the code. `subject`: the provider's `sub` for the
   * person, from the ID token (OpenID providers) or UserInfo; null when the provider tells neither.
   */
  redeem(attempt: {
    callbackUrl: URL;
    redirectUri: string;
    state: string;
    nonce: string;
    codeVerifier: string;
  }): Promise<PersonTokenSet & { subject: string | null }>;
  /** A new access token. Throws PERSON_LOGIN_NOT_LINKED when the provider answers `invalid_grant` (revoked, expired). */
  refresh(refreshToken: string, previousScope: string): Promise<PersonTokenSet>;
}

const REQUEST_TIMEOUT_MS = 10_000;

/**
 * What talking to one provider takes: its metadata (discovered once, or from the configured URLs), the client's
 * authentication at the token endpoint, request options (timeout, loopback http, the SSRF-guarded dispatcher),
 * and the two answers every grant shares (a failure naming the login, a token set from a token response).
 */
function providerAccess(provider: AuthorizationCodeProvider, options: AuthorizationCodeClientOptions) {
  const client: oauth.Client = { client_id: provider.clientId };
  const where = new URL(provider.issuer ?? provider.tokenUrl!);
  const isInsecureAllowed = where.protocol === 'http:' && isLoopbackHostname(where.hostname);
  const insecure = isInsecureAllowed ? { [oauth.allowInsecureRequests]: true } : {};
  const dispatcher = options.dispatcher;
  const requestOptions = () => ({
    ...insecure,
    ...(dispatcher
      ? {
          [oauth.customFetch]: ((input: string, init: RequestInit) =>
            undiciFetch(input, { ...(init as object), dispatcher } as Parameters<typeof undiciFetch>[1])) as unknown as typeof fetch,
        }
      : {}),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const isOpenId = provider.scopes.includes('openid');
  let discovered: Promise<oauth.AuthorizationServer> | undefined;

  function failure(message: string, cause?: unknown): GatewayError {
    const refusal = findSsrfRefusal(cause);
    if (refusal) return refusal as GatewayError;
    return new GatewayError('PERSON_LOGIN_FAILED', `the login ${options.requester}: ${message}`, {
      details: { login: options.requester },
      ...(cause === undefined ? {} : { cause }),
    });
  }

  /** RFC 8414 / OpenID Connect Discovery 1.0; an OpenID provider first, then OAuth metadata. */
  async function discover(issuer: URL): Promise<oauth.AuthorizationServer> {
    let lastError: unknown;
    for (const algorithm of ['oidc', 'oauth2'] as const) {
      try {
        const response = await oauth.discoveryRequest(issuer, { algorithm, ...requestOptions() });
        return await oauth.processDiscoveryResponse(issuer, response);
      } catch (error) {
        lastError = error;
      }
    }
    throw failure(`discovery at ${issuer.href} failed: ${(lastError as Error).message}`, lastError);
  }

  function authorizationServer(): Promise<oauth.AuthorizationServer> {
    if (!provider.issuer) {
      return Promise.resolve({
        issuer: new URL(provider.authorizationUrl!).origin,
        authorization_endpoint: provider.authorizationUrl!,
        token_endpoint: provider.tokenUrl!,
      });
    }
    discovered ??= discover(new URL(provider.issuer)).catch((error: unknown) => {
      discovered = undefined;
      throw error;
    });
    return discovered;
  }

  async function clientAuthentication(as: oauth.AuthorizationServer): Promise<oauth.ClientAuth> {
    const secret = await options.clientSecret();
    // RFC 8414 §2: without the list, client_secret_basic is the default every server supports.
    const methods = as.token_endpoint_auth_methods_supported;
    return methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')
      ? oauth.ClientSecretPost(secret)
      : oauth.ClientSecretBasic(secret);
  }

  const resourceParameters = (): Record<string, string> => (provider.resource ? { resource: provider.resource } : {});

  function tokenSet(result: oauth.TokenEndpointResponse, started: number, requestedScope: string): PersonTokenSet {
    if (result.token_type.toLowerCase() !== 'bearer') {
      throw failure(`the provider issued a '${result.token_type}' token; only bearer tokens are supported`);
    }
    const lifetime = typeof result.expires_in === 'number' && result.expires_in > 0 ? result.expires_in * 1000 : DEFAULT_TOKEN_LIFETIME_MS;
    return {
      accessToken: result.access_token,
      ...(result.refresh_token ? { refreshToken: result.refresh_token } : {}),
      // The clock starts when the request was sent: the conservative side.
      expiresAt: started + lifetime,
      scope: typeof result.scope === 'string' ? result.scope : requestedScope,
    };
  }

  return { client, isOpenId, requestOptions, failure, authorizationServer, clientAuthentication, resourceParameters, tokenSet };
}

export function createAuthorizationCodeClient(
  provider: AuthorizationCodeProvider,
  options: AuthorizationCodeClientOptions,
): AuthorizationCodeClient {
  const now = options.now ?? Date.now;
  const { client, isOpenId, requestOptions, failure, authorizationServer, clientAuthentication, resourceParameters, tokenSet } =
    providerAccess(provider, options);

  async function authorizationEndpoint(): Promise<string> {
    const as = await authorizationServer();
    if (!as.authorization_endpoint) throw failure('the provider publishes no authorization_endpoint');
    return as.authorization_endpoint;
  }

  return {
    authorizationEndpoint,
    async authorizationUrl({ redirectUri, state, nonce, codeVerifier }) {
      const url = new URL(await authorizationEndpoint());
      url.searchParams.set('response_type', 'code');
      url.searchParams.set('client_id', provider.clientId);
      url.searchParams.set('redirect_uri', redirectUri);
      if (provider.scopes.length > 0) url.searchParams.set('scope', provider.scopes.join(' '));
      url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
      url.searchParams.set('code_challenge_method', 'S256');
      url.searchParams.set('state', state);
      if (isOpenId) url.searchParams.set('nonce', nonce);
      if (provider.resource) url.searchParams.set('resource', provider.resource);
      return url.href;
    },

    async redeem({ callbackUrl, redirectUri, state, nonce, codeVerifier }) {
      const as = await authorizationServer();
      const requestedScope = provider.scopes.join(' ');
      try {
        // state, the error response, and RFC 9207's iss (required when the metadata says the provider sends it).
        const parameters = oauth.validateAuthResponse(as, client, callbackUrl, state);
        const started = now();
        const response = await oauth.authorizationCodeGrantRequest(
          as,
          client,
          await clientAuthentication(as),
          parameters,
          redirectUri,
          codeVerifier,
          { ...requestOptions(), additionalParameters: resourceParameters() },
        );
        const result = await oauth.processAuthorizationCodeResponse(as, client, response, {
          ...(isOpenId ? { expectedNonce: nonce, requireIdToken: true } : {}),
        });
        const tokens = tokenSet(result, started, requestedScope);
        let subject = oauth.getValidatedIdTokenClaims(result)?.sub ?? null;
        if (subject === null && as.userinfo_endpoint) {
          const userInfo = await oauth.processUserInfoResponse(
            as,
            client,
            oauth.skipSubjectCheck,
            await oauth.userInfoRequest(as, client, result.access_token, requestOptions()),
          );
          subject = userInfo.sub;
        }
        return { ...tokens, subject };
      } catch (error) {
        if (error instanceof GatewayError) throw error;
        if (error instanceof oauth.AuthorizationResponseError) {
          throw failure(
            `the provider refused the authorization: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`,
          );
        }
        throw failure(`linking failed: ${(error as Error).message}`, error);
      }
    },

    async refresh(refreshToken, previousScope) {
      const as = await authorizationServer();
      const started = now();
      try {
        const response = await oauth.refreshTokenGrantRequest(as, client, await clientAuthentication(as), refreshToken, {
          ...requestOptions(),
          additionalParameters: resourceParameters(),
        });
        const result = await oauth.processRefreshTokenResponse(as, client, response);
        return tokenSet(result, started, previousScope);
      } catch (error) {
        if (error instanceof GatewayError) throw error;
        // RFC 6749 §5.2: the grant is invalid, expired or revoked; only the person can give a new one.
        if (error instanceof oauth.ResponseBodyError && error.error === 'invalid_grant') {
          throw new GatewayError(
            'PERSON_LOGIN_NOT_LINKED',
            `the provider no longer accepts the grant of ${options.requester} (invalid_grant): the person must link the account again`,
            { details: { login: options.requester, error: 'invalid_grant' } },
          );
        }
        throw failure(`refreshing the access token failed: ${(error as Error).message}`, error);
      }
    },
  };
}
