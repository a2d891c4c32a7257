import { canonicalMcpUrl, GatewayError, resolveConfigPath, type AuthConfig, type LoadedConfig } from '@gateway/core';
import { gatewayDataDirectory, peopleFilePath } from '@gateway/runtime';
import { classifyRedirectUri } from './redirect-uris.js';

/** The fifteen minutes … seven days the consent page offers unless configured otherwise. */
export const DEFAULT_LIFETIME_CHOICES_SECONDS = [900, 3600, 28800, 86400, 604800];

/** How long a just-rotated refresh token may be presented again (docs/authorization.md › Refresh token rotation). */
export const DEFAULT_REFRESH_REUSE_GRACE_SECONDS = 60;

/** Everything the authorization area derives from gateway.yaml, with defaults applied once. */
export interface AuthSettings {
  /** The issuer: gateway.url without a trailing slash (RFC 8414 §2: no query, no fragment). */
  issuer: string;
  /** Path prefix of the issuer ('' at the root), under which the AS endpoints live. */
  basePath: string;
  /** The canonical /mcp URL: the RFC 8707 resource and the token audience. */
  mcpUrl: string;
  /** Is the gateway reached over https (Secure cookies, `__Host-` prefix)? */
  isHttps: boolean;
  endpoints: {
    authorization: string;
    token: string;
    registration: string;
    revocation: string;
    jwks: string;
    protectedResourceMetadata: string;
  };
  dataDirectory: string;
  peopleFile: string;
  localAccountsEnabled: boolean;
  oidc: AuthConfig['oidc'];
  clients: NonNullable<AuthConfig['clients']>;
  clientMetadata: { enabled: boolean; maxBytes: number; timeoutMs: number; maxCacheSeconds: number; caCertificateFiles: string[] };
  registration: { enabled: boolean; perIpPerHour: number; unusedExpirySeconds: number; idleExpirySeconds: number };
  maxSessionSeconds: number;
  lifetimeChoicesSeconds: number[];
  accessTokenSeconds: number;
  /** A rotated refresh token presented again this soon, its successor unused, gets a new successor (RFC 9700 §4.14.2). */
  refreshReuseGraceSeconds: number;
  signingKeyMaxAgeDays: number;
  browserSessionSeconds: number;
  maxFailedAttempts: number;
  lockoutSeconds: number;
  /** Authorization codes live this long (OAuth 2.1 §4.1.2: short, ≤ 10 min recommended). */
  codeSeconds: number;
  /** Bounds on /authorize, which anyone can call (docs/authorization.md › `/authorize`). */
  authorize: { perAddressPerMinute: number; perClientPerMinute: number; maxPendingPerClient: number; maxPending: number };
  /** A pending /authorize request waits this long for sign-in and a decision. */
  pendingRequestSeconds: number;
}

export function authSettings(loaded: LoadedConfig, mcpUrl = canonicalMcpUrl(loaded.config)): AuthSettings {
  const auth = loaded.config.auth ?? {};
  const issuer = loaded.config.gateway.url.replace(/\/+$/, '');
  const issuerUrl = new URL(issuer);
  const basePath = issuerUrl.pathname.replace(/\/+$/, '');
  const mcpPath = new URL(mcpUrl).pathname;
  const maxSessionSeconds = auth.sessions?.maxLifetimeSeconds ?? 604800;
  const choices = (auth.sessions?.lifetimeChoicesSeconds ?? DEFAULT_LIFETIME_CHOICES_SECONDS).filter(
    (seconds) => seconds <= maxSessionSeconds,
  );
  return {
    issuer,
    basePath,
    mcpUrl,
    isHttps: issuerUrl.protocol === 'https:',
    endpoints: {
      authorization: `${issuer}/authorize`,
      token: `${issuer}/oauth/token`,
      registration: `${issuer}/oauth/register`,
      revocation: `${issuer}/oauth/revoke`,
      jwks: `${issuer}/oauth/jwks.json`,
      protectedResourceMetadata: `${issuerUrl.origin}/.well-known/oauth-protected-resource${mcpPath}`,
    },
    dataDirectory: gatewayDataDirectory(loaded),
    peopleFile: peopleFilePath(loaded),
    localAccountsEnabled: auth.local?.enabled ?? true,
    oidc: auth.oidc,
    clients: checkedClients(auth.clients ?? []),
    clientMetadata: {
      enabled: auth.clientMetadata?.enabled ?? true,
      maxBytes: auth.clientMetadata?.maxBytes ?? 16384,
      timeoutMs: auth.clientMetadata?.timeoutMs ?? 5000,
      maxCacheSeconds: auth.clientMetadata?.maxCacheSeconds ?? 86400,
      caCertificateFiles: (auth.clientMetadata?.caCertificates ?? []).map((file) => resolveConfigPath(loaded, file)),
    },
    registration: {
      enabled: auth.registration?.enabled ?? true,
      perIpPerHour: auth.registration?.perIpPerHour ?? 20,
      unusedExpirySeconds: auth.registration?.unusedExpirySeconds ?? 86400,
      idleExpirySeconds: auth.registration?.idleExpirySeconds ?? 7776000,
    },
    maxSessionSeconds,
    lifetimeChoicesSeconds: choices.length > 0 ? choices : [maxSessionSeconds],
    accessTokenSeconds: auth.tokens?.accessTokenSeconds ?? 600,
    refreshReuseGraceSeconds: auth.tokens?.refreshReuseGraceSeconds ?? DEFAULT_REFRESH_REUSE_GRACE_SECONDS,
    signingKeyMaxAgeDays: auth.tokens?.signingKeyMaxAgeDays ?? 90,
    browserSessionSeconds: auth.signIn?.browserSessionSeconds ?? 28800,
    maxFailedAttempts: auth.signIn?.maxFailedAttempts ?? 5,
    lockoutSeconds: auth.signIn?.lockoutSeconds ?? 900,
    authorize: {
      perAddressPerMinute: auth.authorize?.perAddressPerMinute ?? 60,
      perClientPerMinute: auth.authorize?.perClientPerMinute ?? 600,
      maxPendingPerClient: auth.authorize?.maxPendingPerClient ?? 1000,
      maxPending: auth.authorize?.maxPending ?? 10_000,
    },
    codeSeconds: 60,
    pendingRequestSeconds: 600,
  };
}

/**
 * Pre-registered clients (`auth.clients`) are held to the rules a dynamic registration is: each redirect URI
 * https, loopback http or a private-use scheme, without fragment or user information (redirect-uris.ts), and
 * each client id once. Checked at start-up, so a bad entry stops the gateway with its place in gateway.yaml
 * instead of failing the client's first sign-in.
 */
function checkedClients(clients: NonNullable<AuthConfig['clients']>): NonNullable<AuthConfig['clients']> {
  const seen = new Set<string>();
  for (const [index, client] of clients.entries()) {
    if (seen.has(client.clientId)) {
      throw new GatewayError('CONFIG_INVALID', `auth.clients[${index}]: the client id '${client.clientId}' is listed twice`);
    }
    seen.add(client.clientId);
    for (const [uriIndex, uri] of client.redirectUris.entries()) {
      const verdict = classifyRedirectUri(uri);
      if ('problem' in verdict) {
        throw new GatewayError(
          'CONFIG_INVALID',
          `auth.clients[${index}].redirectUris[${uriIndex}] (client '${client.clientId}'): not a redirect URI the gateway accepts: ` +
            verdict.problem,
        );
      }
    }
  }
  return clients;
}
