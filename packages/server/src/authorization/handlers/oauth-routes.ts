import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { randomToken, sessionState, type SessionRecord, type SessionStore } from '../stores/session-store.js';
import { OAuthProblem, REGISTRATION_LIMITS, TOKEN_ENDPOINT_AUTH_METHODS, type ClientRegistry, type OAuthClient } from '../oauth/clients.js';
import { addFormParser, allowCors, formOf, registerPreflight, repeatedParameter, sendOAuthJson, sendOAuthProblem } from '../oauth/http.js';
import type { SigningKeySet } from '../oauth/signing-keys.js';
import { TokenRejected, type AccessTokens } from '../oauth/tokens.js';
import type { AuthSettings } from '../oauth/settings.js';

export interface OAuthRoutesOptions {
  settings: AuthSettings;
  clients: ClientRegistry;
  store: SessionStore;
  keys: SigningKeySet;
  tokens: AccessTokens;
  logger: { info(object: object, message: string): void; warn(object: object, message: string): void };
}

/** RFC 9728 §2: the protected resource (/mcp) and who issues its tokens. */
export function protectedResourceMetadata(settings: AuthSettings): Record<string, unknown> {
  return {
    // RFC 9728 §3.3: must equal, code point for code point, the URL clients use for /mcp.
    resource: settings.mcpUrl,
    authorization_servers: [settings.issuer],
    bearer_methods_supported: ['header'],
    resource_name: 'Governed tool gateway',
  };
}

/** RFC 8414 §2 metadata, also served at the OIDC discovery path (MCP clients try both). */
export function authorizationServerMetadata(settings: AuthSettings): Record<string, unknown> {
  return {
    issuer: settings.issuer,
    authorization_endpoint: settings.endpoints.authorization,
    token_endpoint: settings.endpoints.token,
    ...(settings.registration.enabled ? { registration_endpoint: settings.endpoints.registration } : {}),
    revocation_endpoint: settings.endpoints.revocation,
    jwks_uri: settings.endpoints.jwks,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: TOKEN_ENDPOINT_AUTH_METHODS,
    revocation_endpoint_auth_methods_supported: TOKEN_ENDPOINT_AUTH_METHODS,
    client_id_metadata_document_supported: settings.clientMetadata.enabled,
    authorization_response_iss_parameter_supported: true,
    subject_types_supported: ['public'],
  };
}

/** RFC 7636 §4.1: 43–128 unreserved characters. */
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

export function registerOAuthRoutes(instance: FastifyInstance, options: OAuthRoutesOptions): void {
  const { settings, clients, store, keys, tokens, logger } = options;
  const base = settings.basePath;
  addFormParser(instance);

  const json = (reply: FastifyReply, body: unknown): FastifyReply => {
    allowCors(reply);
    return reply.header('cache-control', 'public, max-age=300').type('application/json; charset=utf-8').send(JSON.stringify(body));
  };

  // RFC 9728 §3.1: path-inserted well-known URL for /mcp, and the root one for clients that try it.
  const resourcePath = new URL(settings.endpoints.protectedResourceMetadata).pathname;
  for (const path of new Set([resourcePath, '/.well-known/oauth-protected-resource'])) {
    instance.get(path, async (_request, reply) => json(reply, protectedResourceMetadata(settings)));
    registerPreflight(instance, path, 'GET');
  }
  // RFC 8414 §3.1 inserts the issuer path after the well-known prefix; OIDC Discovery §4 appends it.
  const metadataPaths = new Set([
    `/.well-known/oauth-authorization-server${base}`,
    `/.well-known/openid-configuration${base}`,
    `${base}/.well-known/openid-configuration`,
  ]);
  for (const path of metadataPaths) {
    instance.get(path, async (_request, reply) => json(reply, authorizationServerMetadata(settings)));
    registerPreflight(instance, path, 'GET');
  }
  instance.get(`${base}/oauth/jwks.json`, async (_request, reply) => json(reply, keys.jwks()));
  registerPreflight(instance, `${base}/oauth/jwks.json`, 'GET');

  // RFC 7591: dynamic registration (deprecated in MCP 2026-07-28, kept for 2025-11-25 clients).
  instance.post(`${base}/oauth/register`, { bodyLimit: REGISTRATION_LIMITS.bodyBytes }, async (request, reply) => {
    allowCors(reply);
    try {
      const registered = clients.register(request.body, request.ip);
      logger.info({ clientId: registered.client_id, from: request.ip }, 'client registered');
      return sendOAuthJson(reply, 201, registered);
    } catch (error) {
      if (error instanceof OAuthProblem) return sendOAuthProblem(reply, error);
      throw error;
    }
  });
  registerPreflight(instance, `${base}/oauth/register`, 'POST');

  instance.post(`${base}/oauth/token`, async (request, reply) => {
    allowCors(reply);
    const form = formOf(request);
    const authorization = request.headers.authorization;
    try {
      const repeated = repeatedParameter(form, ['grant_type', 'code', 'code_verifier', 'redirect_uri', 'refresh_token', 'client_id', 'resource']);
      if (repeated) throw new OAuthProblem('invalid_request', `${repeated} was sent more than once`);
      const client = await clients.authenticate(form, authorization);
      const grantType = form.get('grant_type');
      if (grantType === 'authorization_code') return sendOAuthJson(reply, 200, await redeemCode(form, client));
      if (grantType === 'refresh_token') return sendOAuthJson(reply, 200, await refresh(form, client));
      throw new OAuthProblem('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    } catch (error) {
      if (error instanceof OAuthProblem) return sendOAuthProblem(reply, error, { basicChallenge: authorization?.toLowerCase().startsWith('basic ') });
      throw error;
    }
  });
  registerPreflight(instance, `${base}/oauth/token`, 'POST');

  function checkResource(form: URLSearchParams, expected: string): void {
    // RFC 8707 §2: a resource other than the one the grant was for is refused with invalid_target. A token
    // request without `resource` gets the audience the code was bound to (docs/authorization.md).
    const resource = form.get('resource');
    if (resource !== null && resource !== expected) {
      throw new OAuthProblem('invalid_target', `resource must be ${expected}`);
    }
  }

  async function tokenResponse(session: SessionRecord, client: OAuthClient): Promise<Record<string, unknown>> {
    const access = await tokens.issue(session);
    const refreshToken = randomToken();
    // The refresh token lives exactly as long as the session, never longer (RFC 9700 §4.14.2).
    store.refreshTokens.save(refreshToken, { sessionId: session.id, clientId: client.clientId, expiresAt: session.expiresAt });
    return { access_token: access.token, token_type: 'Bearer', expires_in: access.expiresIn, refresh_token: refreshToken };
  }

  async function redeemCode(form: URLSearchParams, client: OAuthClient): Promise<Record<string, unknown>> {
    const code = form.get('code');
    if (!code) throw new OAuthProblem('invalid_request', 'code is required');
    const stored = store.codes.redeem(code);
    if (!stored) throw new OAuthProblem('invalid_grant', 'unknown or expired authorization code');
    if (stored.alreadyUsed) {
      // OAuth 2.1 §4.1.3 / RFC 9700 §4.5: a second redemption is refused and what the code produced is revoked.
      store.revokeSession(stored.sessionId, 'authorization code used twice');
      logger.warn({ sessionId: stored.sessionId, clientId: client.clientId }, 'authorization code replayed; session revoked');
      throw new OAuthProblem('invalid_grant', 'the authorization code was already used; its session has been revoked');
    }
    if (stored.clientId !== client.clientId) throw new OAuthProblem('invalid_grant', 'the code was issued to another client');
    if (stored.expiresAt <= Date.now()) throw new OAuthProblem('invalid_grant', 'the authorization code has expired');
    const redirectUri = form.get('redirect_uri');
    if (stored.redirectUri !== '' && redirectUri !== stored.redirectUri) {
      throw new OAuthProblem('invalid_grant', 'redirect_uri differs from the authorization request');
    }
    const verifier = form.get('code_verifier');
    // RFC 9700 §2.1.1 / OAuth 2.1 §4.1.3: every code carries an S256 challenge, so a verifier is required.
    if (!verifier) throw new OAuthProblem('invalid_grant', 'code_verifier is required (PKCE)');
    if (!CODE_VERIFIER.test(verifier) || s256(verifier) !== stored.codeChallenge) {
      throw new OAuthProblem('invalid_grant', 'code_verifier does not match the code_challenge');
    }
    checkResource(form, stored.resource);
    const session = store.session(stored.sessionId);
    if (!session || sessionState(session) !== 'open') throw new OAuthProblem('invalid_grant', 'the session for this code has ended');
    clients.markAuthorized(client);
    return tokenResponse(session, client);
  }

  async function refresh(form: URLSearchParams, client: OAuthClient): Promise<Record<string, unknown>> {
    const token = form.get('refresh_token');
    if (!token) throw new OAuthProblem('invalid_request', 'refresh_token is required');
    const stored = store.refreshTokens.find(token);
    if (!stored) throw new OAuthProblem('invalid_grant', 'unknown refresh token');
    if (stored.clientId !== client.clientId) throw new OAuthProblem('invalid_grant', 'the refresh token was issued to another client');
    const session = store.session(stored.sessionId);
    if (!session || sessionState(session) !== 'open' || stored.expiresAt <= Date.now()) {
      throw new OAuthProblem('invalid_grant', 'the session for this refresh token has ended');
    }
    if (session.reapprovalRequestedAt !== null) {
      // Re-approval (docs/authorization.md): /mcp asked the client to have changed tools approved again.
      // A refresh would only renew the stale approval, so it is refused and the client authorizes anew.
      throw new OAuthProblem('invalid_grant', `the person must approve ${session.reapprovalTools.join(', ') || 'changed tools'} again: start a new authorization`);
    }
    checkResource(form, settings.mcpUrl);
    // Signed before the rotation so that the rotation is one synchronous transaction with nothing awaited
    // in between (a concurrent request cannot interleave; a crash cannot split it).
    const access = await tokens.issue(session);
    const successor = randomToken();
    const rotation = store.refreshTokens.rotate(token, successor, { graceMs: settings.refreshReuseGraceSeconds * 1000 });
    switch (rotation.outcome) {
      case 'unknown':
        throw new OAuthProblem('invalid_grant', 'unknown refresh token');
      case 'reused':
        // RFC 9700 §4.14.2: the replay of a rotated token outside the grace rule revokes the whole grant.
        store.revokeSession(rotation.sessionId, 'refresh token used twice');
        logger.warn({ sessionId: rotation.sessionId, clientId: client.clientId, why: rotation.why }, 'refresh token replayed; session revoked');
        throw new OAuthProblem('invalid_grant', 'the refresh token was already used; its session has been revoked');
      case 'reissued':
        logger.info({ sessionId: rotation.sessionId, clientId: client.clientId }, 'refresh token presented again within the grace window; successor replaced');
        break;
      case 'rotated':
        break;
      default: {
        const unreachable: never = rotation;
        throw new Error(`unhandled rotation ${JSON.stringify(unreachable)}`);
      }
    }
    return { access_token: access.token, token_type: 'Bearer', expires_in: access.expiresIn, refresh_token: successor };
  }

  // RFC 7009: revoking either token ends the session it belongs to (we keep no per-token grants).
  instance.post(`${base}/oauth/revoke`, async (request, reply) => {
    allowCors(reply);
    const form = formOf(request);
    const authorization = request.headers.authorization;
    try {
      const client = await clients.authenticate(form, authorization);
      const token = form.get('token');
      if (!token) throw new OAuthProblem('invalid_request', 'token is required');
      await revoke(token, client, form.get('token_type_hint'));
      // RFC 7009 §2.2: 200 whether or not the token was valid.
      return sendOAuthJson(reply, 200, {});
    } catch (error) {
      if (error instanceof OAuthProblem) return sendOAuthProblem(reply, error, { basicChallenge: authorization?.toLowerCase().startsWith('basic ') });
      throw error;
    }
  });
  registerPreflight(instance, `${base}/oauth/revoke`, 'POST');

  async function revoke(token: string, client: OAuthClient, hint: string | null): Promise<void> {
    const revokeIfOwned = (sessionId: string, clientId: string): void => {
      if (clientId !== client.clientId) return;
      const session = store.session(sessionId);
      if (session && session.revokedAt === null) store.revokeSession(sessionId, 'revoked by the client');
    };
    const asRefresh = (): boolean => {
      const stored = store.refreshTokens.find(token);
      if (stored) revokeIfOwned(stored.sessionId, stored.clientId);
      return stored !== undefined;
    };
    if (hint !== 'access_token' && asRefresh()) return;
    try {
      const claims = await tokens.verify(token, { ignoreExpiry: true });
      revokeIfOwned(claims.sid, claims.client_id);
      return;
    } catch (error) {
      if (!(error instanceof TokenRejected)) throw error;
    }
    if (hint === 'access_token') asRefresh();
  }
}

