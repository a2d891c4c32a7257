import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { OAuthProblem, type OAuthClient } from '../oauth/clients.js';
import {
  allowCors,
  CLIENT_AUTHENTICATION_HEADERS,
  FORM_BODY,
  formOf,
  registerPreflight,
  repeatedParameter,
  sendOAuthJson,
  sendOAuthProblem,
} from '../oauth/http.js';
import { sessionState, type SessionRecord } from '../stores/sessions.js';
import { randomToken } from '../stores/tokens.js';
import type { AuthorizationDependencies } from './dependencies.js';

type TokenDependencies = Pick<
  AuthorizationDependencies,
  'settings' | 'clients' | 'sessions' | 'codes' | 'refreshTokens' | 'tokens' | 'logger'
>;

/** RFC 7636 §4.1: 43–128 unreserved characters. */
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** The token endpoint (OAuth 2.1 §3.2): the authorization_code and refresh_token grants. */
export function registerTokenEndpoint(instance: FastifyInstance, dependencies: TokenDependencies): void {
  const { settings, clients } = dependencies;
  const path = `${settings.basePath}/oauth/token`;
  instance.post(path, { schema: { headers: CLIENT_AUTHENTICATION_HEADERS, body: FORM_BODY } }, async (request, reply) => {
    allowCors(reply);
    const form = formOf(request);
    const authorization = request.headers.authorization;
    try {
      const repeated = repeatedParameter(form, [
        'grant_type',
        'code',
        'code_verifier',
        'redirect_uri',
        'refresh_token',
        'client_id',
        'resource',
      ]);
      if (repeated) throw new OAuthProblem('invalid_request', `${repeated} was sent more than once`);
      const client = await clients.authenticate(form, authorization);
      const grantType = form.get('grant_type');
      if (grantType === 'authorization_code') return sendOAuthJson(reply, 200, await redeemCode(dependencies, form, client));
      if (grantType === 'refresh_token') return sendOAuthJson(reply, 200, await refresh(dependencies, form, client));
      throw new OAuthProblem('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    } catch (error) {
      if (error instanceof OAuthProblem)
        return sendOAuthProblem(reply, error, { basicChallenge: authorization?.toLowerCase().startsWith('basic ') });
      throw error;
    }
  });
  registerPreflight(instance, path, 'POST');
}

function checkResource(form: URLSearchParams, expected: string): void {
  // RFC 8707 §2: a resource other than the one the grant was for is refused with invalid_target. A token
  // request without `resource` gets the audience the code was bound to (docs/authorization.md).
  const resource = form.get('resource');
  if (resource !== null && resource !== expected) {
    throw new OAuthProblem('invalid_target', `resource must be ${expected}`);
  }
}

async function tokenResponse(
  { refreshTokens, tokens }: TokenDependencies,
  session: SessionRecord,
  client: OAuthClient,
): Promise<Record<string, unknown>> {
  const access = await tokens.issue(session);
  const refreshToken = randomToken();
  // The refresh token lives exactly as long as the session, never longer (RFC 9700 §4.14.2).
  await refreshTokens.save(refreshToken, { sessionId: session.id, clientId: client.clientId, expiresAt: session.expiresAt });
  return { access_token: access.token, token_type: 'Bearer', expires_in: access.expiresIn, refresh_token: refreshToken };
}

async function redeemCode(dependencies: TokenDependencies, form: URLSearchParams, client: OAuthClient): Promise<Record<string, unknown>> {
  const { clients, sessions, codes, logger } = dependencies;
  const code = form.get('code');
  if (!code) throw new OAuthProblem('invalid_request', 'code is required');
  const stored = await codes.redeem(code);
  if (!stored) throw new OAuthProblem('invalid_grant', 'unknown or expired authorization code');
  if (stored.alreadyUsed) {
    // OAuth 2.1 §4.1.3 / RFC 9700 §4.5: a second redemption is refused and what the code produced is revoked.
    await sessions.revoke(stored.sessionId, 'authorization code used twice');
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
  const session = await sessions.find(stored.sessionId);
  if (!session || sessionState(session) !== 'open') throw new OAuthProblem('invalid_grant', 'the session for this code has ended');
  await clients.markAuthorized(client);
  return tokenResponse(dependencies, session, client);
}

async function refresh(dependencies: TokenDependencies, form: URLSearchParams, client: OAuthClient): Promise<Record<string, unknown>> {
  const { settings, sessions, refreshTokens, tokens, logger } = dependencies;
  const token = form.get('refresh_token');
  if (!token) throw new OAuthProblem('invalid_request', 'refresh_token is required');
  const stored = await refreshTokens.find(token);
  if (!stored) throw new OAuthProblem('invalid_grant', 'unknown refresh token');
  if (stored.clientId !== client.clientId) throw new OAuthProblem('invalid_grant', 'the refresh token was issued to another client');
  const session = await sessions.find(stored.sessionId);
  if (!session || sessionState(session) !== 'open' || stored.expiresAt <= Date.now()) {
    throw new OAuthProblem('invalid_grant', 'the session for this refresh token has ended');
  }
  if (session.reapprovalRequestedAt !== null) {
    // Re-approval (docs/authorization.md): /mcp asked the client to have changed tools approved again.
    // A refresh would only renew the stale approval, so it is refused and the client authorizes anew.
    throw new OAuthProblem(
      'invalid_grant',
      `the person must approve ${session.reapprovalTools.join(', ') || 'changed tools'} again: start a new authorization`,
    );
  }
  checkResource(form, settings.mcpUrl);
  // Signed before the rotation: the rotation is one atomic port call (one transaction in the adapter), so a
  // concurrent request cannot interleave and a crash cannot split it.
  const access = await tokens.issue(session);
  const successor = randomToken();
  const rotation = await refreshTokens.rotate(token, successor, { graceMs: settings.refreshReuseGraceSeconds * 1000 });
  switch (rotation.outcome) {
    case 'unknown':
      throw new OAuthProblem('invalid_grant', 'unknown refresh token');
    case 'reused':
      // RFC 9700 §4.14.2: the replay of a rotated token outside the grace rule revokes the whole grant.
      await sessions.revoke(rotation.sessionId, 'refresh token used twice');
      logger.warn(
        { sessionId: rotation.sessionId, clientId: client.clientId, why: rotation.why },
        'refresh token replayed; session revoked',
      );
      throw new OAuthProblem('invalid_grant', 'the refresh token was already used; its session has been revoked');
    case 'reissued':
      logger.info(
        { sessionId: rotation.sessionId, clientId: client.clientId },
        'refresh token presented again within the grace window; successor replaced',
      );
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
