import * as oauth from 'oauth4webapi';
import { GatewayError, isLoopbackHostname, type AuthConfig } from '@gateway/core';
import type { Vault } from '@gateway/runtime';
import type { SignedInPerson } from './browser-sessions.js';

/**
 * Sign-in through the company's OpenID Connect provider (oauth4webapi): authorization code + PKCE S256,
 * state and nonce bound to the browser session, ID token validated (signature, iss, aud, nonce, expiry).
 *
 * Claims mapping (docs/authorization.md › People): the person is `oidc:<iss>#<sub>` — `sub` is only unique
 * per issuer (OIDC Core §5.7), so both together are the identity; `name` (else `preferred_username`, else
 * `email`, else `sub`) is what pages show; `email` is kept only when `email_verified` is not false. Claims
 * missing from the ID token are read from UserInfo (its `sub` must match the ID token's).
 */
export interface OidcSignIn {
  readonly label: string;
  /** The provider's authorization URL for this attempt. */
  start(input: { redirectUri: string; state: string; nonce: string; codeVerifier: string }): Promise<string>;
  /** Validates the callback and returns the person, or throws OIDC_SIGN_IN_FAILED. */
  finish(input: { callbackUrl: URL; redirectUri: string; state: string; nonce: string; codeVerifier: string }): Promise<SignedInPerson>;
}

export function oidcSubject(issuer: string, subject: string): string {
  return `oidc:${issuer}#${subject}`;
}

export function createOidcSignIn(config: NonNullable<AuthConfig['oidc']>, vault: Vault): OidcSignIn {
  const issuer = new URL(config.issuer);
  // oauth4webapi refuses plain http; allow it only for a provider on this machine (development, tests).
  const isInsecureAllowed = issuer.protocol === 'http:' && isLoopbackHostname(issuer.hostname);
  const requestOptions = isInsecureAllowed ? { [oauth.allowInsecureRequests]: true } : {};
  const client: oauth.Client = { client_id: config.clientId };
  let discovered: Promise<oauth.AuthorizationServer> | undefined;

  function authorizationServer(): Promise<oauth.AuthorizationServer> {
    discovered ??= oauth
      .discoveryRequest(issuer, { algorithm: 'oidc', ...requestOptions })
      .then((response) => oauth.processDiscoveryResponse(issuer, response))
      .catch((error: unknown) => {
        discovered = undefined;
        throw failure(`discovery at ${issuer.href} failed: ${(error as Error).message}`, error);
      });
    return discovered;
  }

  async function clientAuthentication(): Promise<oauth.ClientAuth> {
    if (!config.clientSecret) return oauth.None();
    const secret = await vault.get(config.clientSecret);
    if (secret === undefined) throw failure(`the vault has no '${config.clientSecret}' (auth.oidc.clientSecret)`);
    return oauth.ClientSecretPost(secret);
  }

  return {
    label: config.label ?? `Sign in with ${issuer.host}`,
    async start({ redirectUri, state, nonce, codeVerifier }) {
      const as = await authorizationServer();
      if (!as.authorization_endpoint) throw failure('the provider publishes no authorization_endpoint');
      const url = new URL(as.authorization_endpoint);
      url.searchParams.set('client_id', config.clientId);
      url.searchParams.set('redirect_uri', redirectUri);
      url.searchParams.set('response_type', 'code');
      url.searchParams.set('scope', (config.scopes ?? ['openid', 'email', 'profile']).join(' '));
      url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
      url.searchParams.set('code_challenge_method', 'S256');
      url.searchParams.set('state', state);
      url.searchParams.set('nonce', nonce);
      return url.href;
    },
    async finish({ callbackUrl, redirectUri, state, nonce, codeVerifier }) {
      const as = await authorizationServer();
      let claims: (oauth.IDToken & Record<string, unknown>) | undefined;
      try {
        const parameters = oauth.validateAuthResponse(as, client, callbackUrl, state);
        const response = await oauth.authorizationCodeGrantRequest(
          as,
          client,
          await clientAuthentication(),
          parameters,
          redirectUri,
          codeVerifier,
          requestOptions,
        );
        const result = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: nonce, requireIdToken: true });
        claims = oauth.getValidatedIdTokenClaims(result);
        // OIDC Core §5.4: with an access token, profile and email claims may be served only by UserInfo.
        if (claims && (claims.email === undefined || claims.name === undefined) && as.userinfo_endpoint) {
          const userInfo = await oauth.processUserInfoResponse(
            as,
            client,
            claims.sub,
            await oauth.userInfoRequest(as, client, result.access_token, requestOptions),
          );
          // The ID token's sub and iss stay authoritative; UserInfo only adds display claims.
          claims = {
            ...userInfo,
            ...claims,
            ...(claims.email === undefined ? { email: userInfo.email, email_verified: userInfo.email_verified } : {}),
            ...(claims.name === undefined ? { name: userInfo.name, preferred_username: userInfo.preferred_username } : {}),
          };
        }
      } catch (error) {
        if (error instanceof GatewayError) throw error;
        throw failure((error as Error).message, error);
      }
      if (!claims) throw failure('the provider returned no ID token');
      const email = typeof claims.email === 'string' && claims.email_verified !== false ? claims.email : undefined;
      if (config.allowedDomains && config.allowedDomains.length > 0) {
        const domain = email?.split('@')[1]?.toLowerCase();
        if (!domain || !config.allowedDomains.some((allowed) => allowed.toLowerCase() === domain)) {
          throw new GatewayError('OIDC_SIGN_IN_REFUSED', 'this account is not in a domain allowed to sign in here');
        }
      }
      const name =
        (typeof claims.name === 'string' && claims.name) ||
        (typeof claims.preferred_username === 'string' && claims.preferred_username) ||
        email ||
        claims.sub;
      const roles = oidcRoles(claims, config.operators);
      return {
        subject: oidcSubject(claims.iss, claims.sub),
        name,
        ...(email ? { email } : {}),
        via: 'oidc',
        ...(roles.length > 0 ? { roles } : {}),
      };
    },
  };
}

/**
 * The roles an OIDC-signed-in person has (`auth.oidc.operators`): `operator` when the mapped claim (a string, or an
 * array of strings) holds one of the configured values.
 */
export function oidcRoles(claims: Record<string, unknown>, operators: { claim: string; values: string[] } | undefined): string[] {
  if (!operators) return [];
  const value = claims[operators.claim];
  const held = typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((item) => typeof item === 'string') : [];
  return held.some((item) => operators.values.includes(item)) ? ['operator'] : [];
}

function failure(message: string, cause?: unknown): GatewayError {
  return new GatewayError('OIDC_SIGN_IN_FAILED', `sign-in through the identity provider failed: ${message}`, { cause });
}
