import { randomBytes } from 'node:crypto';
import { secretsEqual } from '@gateway/runtime';
import { GatewayError } from '@gateway/core';
import type { Vault } from '@gateway/runtime';
import type { RegisteredClients } from '../stores/ports.js';
import { hashToken } from '../stores/tokens.js';
import { isClientMetadataUrl, type ClientMetadataFetcher } from './client-metadata-document.js';
import { classifyRedirectUri, MAX_REDIRECT_URI_LENGTH, redirectUriMatches } from './redirect-uris.js';
import type { AuthSettings } from './settings.js';

/** How a client became known to the gateway. */
export type ClientRegistration = 'metadata-document' | 'dynamic' | 'configured';

export interface OAuthClient {
  clientId: string;
  name: string;
  redirectUris: string[];
  registration: ClientRegistration;
  /** `none` for public clients; confidential clients authenticate at the token endpoint. */
  authMethod: 'none' | 'client_secret_basic' | 'client_secret_post';
}

export type TokenEndpointAuthMethod = OAuthClient['authMethod'];
export const TOKEN_ENDPOINT_AUTH_METHODS: TokenEndpointAuthMethod[] = ['none', 'client_secret_basic', 'client_secret_post'];

/** An OAuth error with its RFC 6749 §5.2 / RFC 7591 §3.2.2 code. */
export class OAuthProblem extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

export interface ClientRegistry {
  /** The client, or an OAuthProblem (`invalid_client`, `invalid_request`) when it is unknown or unusable. */
  find(clientId: string): Promise<OAuthClient>;
  /** RFC 7591 §3.1 registration; returns the response body (RFC 7591 §3.2.1). */
  register(body: unknown, from: string): Promise<Record<string, unknown>>;
  /** Client authentication at the token and revocation endpoints (OAuth 2.1 §2.4). */
  authenticate(form: URLSearchParams, authorization: string | undefined): Promise<OAuthClient>;
  /** A successful authorization keeps a dynamic registration from expiring. */
  markAuthorized(client: OAuthClient): Promise<void>;
}

/**
 * Caps on what a dynamic registration may store (docs/authorization.md › Dynamic Client Registration): the
 * endpoint is unauthenticated, so every field that is kept and shown is bounded.
 */
export const REGISTRATION_LIMITS = {
  /** Bytes of the JSON body of `POST /oauth/register`. */
  bodyBytes: 65_536,
  redirectUris: 20,
  redirectUriLength: MAX_REDIRECT_URI_LENGTH,
  clientNameLength: 200,
  clientUriLength: 2000,
  scopeLength: 1000,
} as const;

export function findRedirectUri(client: OAuthClient, requested: string | undefined): string | undefined {
  if (requested === undefined) {
    // OAuth 2.1 §4.1.1: redirect_uri may be omitted only when exactly one is registered.
    return client.redirectUris.length === 1 ? client.redirectUris[0] : undefined;
  }
  return client.redirectUris.some((registered) => redirectUriMatches(registered, requested)) ? requested : undefined;
}

/** RFC 7591 §2 client_uri: a web page about the client; only plain https, bounded, printable ASCII. */
function isWebPageUrl(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > REGISTRATION_LIMITS.clientUriLength || /[^\x21-\x7e]/.test(value)) return false;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

/**
 * RFC 7591 §2 client metadata of a registration request, checked and bounded (docs/authorization.md › Dynamic
 * Client Registration): what is stored, and the token endpoint authentication method. An OAuthProblem otherwise.
 */
function registrationMetadata(request: Record<string, unknown>): { metadata: Record<string, unknown>; authMethod: string } {
  const redirectUris = request.redirect_uris;
  if (!Array.isArray(redirectUris) || redirectUris.length === 0 || !redirectUris.every((uri) => typeof uri === 'string')) {
    throw new OAuthProblem('invalid_redirect_uri', 'redirect_uris must be a non-empty array of strings');
  }
  if (redirectUris.length > REGISTRATION_LIMITS.redirectUris) {
    throw new OAuthProblem('invalid_redirect_uri', `at most ${REGISTRATION_LIMITS.redirectUris} redirect_uris may be registered`);
  }
  const kinds = (redirectUris as string[]).map((uri) => {
    const classified = classifyRedirectUri(uri);
    if ('problem' in classified) throw new OAuthProblem('invalid_redirect_uri', classified.problem);
    return classified.kind;
  });
  // OIDC Dynamic Registration §2 application_type: a web client uses https only; a native client may use
  // loopback http or private-use schemes (RFC 8252). When absent we infer it from the URIs rather than
  // default to `web`, which would refuse every native client that omits it (docs/authorization.md).
  const applicationType = request.application_type ?? (kinds.every((kind) => kind === 'https') ? 'web' : 'native');
  if (applicationType !== 'web' && applicationType !== 'native')
    throw new OAuthProblem('invalid_client_metadata', "application_type must be 'web' or 'native'");
  if (applicationType === 'web' && kinds.some((kind) => kind !== 'https')) {
    throw new OAuthProblem(
      'invalid_redirect_uri',
      'a web application may register only https redirect URIs (application_type native allows loopback and app schemes)',
    );
  }
  const authMethod = (request.token_endpoint_auth_method ?? 'none') as string;
  if (!TOKEN_ENDPOINT_AUTH_METHODS.includes(authMethod as TokenEndpointAuthMethod)) {
    throw new OAuthProblem(
      'invalid_client_metadata',
      `token_endpoint_auth_method must be one of ${TOKEN_ENDPOINT_AUTH_METHODS.join(', ')}`,
    );
  }
  const grantTypes = (request.grant_types ?? ['authorization_code']) as unknown;
  if (!Array.isArray(grantTypes) || !grantTypes.every((grant) => grant === 'authorization_code' || grant === 'refresh_token')) {
    throw new OAuthProblem('invalid_client_metadata', 'grant_types may list only authorization_code and refresh_token');
  }
  const responseTypes = (request.response_types ?? ['code']) as unknown;
  if (!Array.isArray(responseTypes) || !responseTypes.every((type) => type === 'code')) {
    throw new OAuthProblem('invalid_client_metadata', "response_types may list only 'code'");
  }
  const clientName = typeof request.client_name === 'string' && request.client_name.trim() !== '' ? request.client_name.trim() : undefined;
  if (clientName !== undefined && clientName.length > REGISTRATION_LIMITS.clientNameLength) {
    throw new OAuthProblem('invalid_client_metadata', `client_name may be at most ${REGISTRATION_LIMITS.clientNameLength} characters`);
  }
  const clientUri = request.client_uri;
  if (clientUri !== undefined && !isWebPageUrl(clientUri)) {
    throw new OAuthProblem(
      'invalid_client_metadata',
      `client_uri must be an https URL of at most ${REGISTRATION_LIMITS.clientUriLength} characters`,
    );
  }
  if (request.scope !== undefined && (typeof request.scope !== 'string' || request.scope.length > REGISTRATION_LIMITS.scopeLength)) {
    throw new OAuthProblem('invalid_client_metadata', `scope must be a string of at most ${REGISTRATION_LIMITS.scopeLength} characters`);
  }
  const metadata: Record<string, unknown> = {
    redirect_uris: redirectUris,
    token_endpoint_auth_method: authMethod,
    grant_types: grantTypes,
    response_types: responseTypes,
    application_type: applicationType,
    ...(clientName ? { client_name: clientName } : {}),
    ...(typeof clientUri === 'string' ? { client_uri: clientUri } : {}),
    ...(typeof request.scope === 'string' ? { scope: request.scope } : {}),
  };
  return { metadata, authMethod };
}

export function createClientRegistry(options: {
  settings: AuthSettings;
  /** Where dynamic registrations are kept. */
  registrations: RegisteredClients;
  vault: Vault;
  metadataDocuments: ClientMetadataFetcher;
}): ClientRegistry {
  const { settings, registrations, vault, metadataDocuments } = options;
  const configured = new Map(settings.clients.map((client) => [client.clientId, client]));

  async function find(clientId: string): Promise<OAuthClient> {
    const fromConfig = configured.get(clientId);
    if (fromConfig) {
      return {
        clientId,
        name: fromConfig.name,
        redirectUris: fromConfig.redirectUris,
        registration: 'configured',
        authMethod: fromConfig.secret ? 'client_secret_basic' : 'none',
      };
    }
    if (isClientMetadataUrl(clientId)) {
      if (!settings.clientMetadata.enabled)
        throw new OAuthProblem('invalid_client', 'client metadata documents are turned off on this gateway', 401);
      try {
        const document = await metadataDocuments.resolve(clientId);
        return {
          clientId,
          name: document.clientName,
          redirectUris: document.redirectUris,
          registration: 'metadata-document',
          authMethod: 'none',
        };
      } catch (error) {
        throw new OAuthProblem('invalid_client', error instanceof GatewayError ? error.message : String(error), 401);
      }
    }
    const stored = await registrations.find(clientId);
    if (stored) {
      const metadata = stored.metadata;
      return {
        clientId,
        name: String(metadata.client_name ?? clientId),
        redirectUris: metadata.redirect_uris as string[],
        registration: 'dynamic',
        authMethod: (metadata.token_endpoint_auth_method as TokenEndpointAuthMethod) ?? 'none',
      };
    }
    throw new OAuthProblem('invalid_client', `unknown client_id ${JSON.stringify(clientId.slice(0, 200))}`, 401);
  }

  async function register(body: unknown, from: string): Promise<Record<string, unknown>> {
    if (!settings.registration.enabled)
      throw new OAuthProblem('access_denied', 'dynamic client registration is turned off on this gateway', 403);
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new OAuthProblem('invalid_client_metadata', 'the request body must be a JSON object');
    const now = Date.now();
    const { metadata, authMethod } = registrationMetadata(body as Record<string, unknown>);
    const clientId = `dcr-${randomBytes(16).toString('base64url')}`;
    const secret = authMethod === 'none' ? undefined : randomBytes(32).toString('base64url');
    // The per-address count and the insert are one step of the store: concurrent registrations cannot pass the limit.
    const outcome = await registrations.register(
      {
        clientId,
        secretHash: secret ? hashToken(secret) : null,
        metadata,
        registeredFrom: from,
        expiresAt: now + settings.registration.unusedExpirySeconds * 1000,
      },
      { since: now - 3_600_000, max: settings.registration.perIpPerHour },
      now,
    );
    if (outcome === 'limited') throw new OAuthProblem('slow_down', 'too many registrations from this address; try again later', 429);
    return {
      client_id: clientId,
      client_id_issued_at: Math.floor(now / 1000),
      ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      ...metadata,
    };
  }

  async function authenticate(form: URLSearchParams, authorization: string | undefined): Promise<OAuthClient> {
    let clientId = form.get('client_id') ?? undefined;
    let secret = form.get('client_secret') ?? undefined;
    if (authorization?.toLowerCase().startsWith('basic ')) {
      // RFC 6749 §2.3.1: id and secret are form-urlencoded before base64.
      const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) throw new OAuthProblem('invalid_client', 'malformed Basic credentials', 401);
      const basicId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
      if (clientId !== undefined && clientId !== basicId)
        throw new OAuthProblem('invalid_request', 'client_id differs from the Basic credentials');
      clientId = basicId;
      secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
    }
    if (!clientId) throw new OAuthProblem('invalid_client', 'client_id is required', 401);
    const client = await find(clientId);
    if (client.authMethod === 'none') return client;
    if (secret === undefined) throw new OAuthProblem('invalid_client', 'this client must authenticate with its secret', 401);
    let isValid = false;
    if (client.registration === 'configured') {
      const secretName = configured.get(clientId)!.secret!;
      const expected = await vault.get(secretName);
      isValid = expected !== undefined && secretsEqual(expected, secret);
    } else {
      const stored = await registrations.find(clientId);
      isValid = stored?.secretHash != null && secretsEqual(stored.secretHash, hashToken(secret));
    }
    if (!isValid) throw new OAuthProblem('invalid_client', 'client authentication failed', 401);
    return client;
  }

  async function markAuthorized(client: OAuthClient): Promise<void> {
    if (client.registration !== 'dynamic') return;
    await registrations.touch(client.clientId, Date.now() + settings.registration.idleExpirySeconds * 1000);
  }

  return { find, register, authenticate, markAuthorized };
}
