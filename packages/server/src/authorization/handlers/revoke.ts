import type { FastifyInstance } from 'fastify';
import { OAuthProblem, type OAuthClient } from '../oauth/clients.js';
import {
  allowCors,
  CLIENT_AUTHENTICATION_HEADERS,
  FORM_BODY,
  formOf,
  registerPreflight,
  sendOAuthJson,
  sendOAuthProblem,
} from '../oauth/http.js';
import { TokenRejected } from '../oauth/tokens.js';
import type { AuthorizationDependencies } from './dependencies.js';

type RevocationDependencies = Pick<AuthorizationDependencies, 'settings' | 'clients' | 'sessions' | 'refreshTokens' | 'tokens'>;

/** RFC 7009: revoking either token ends the session it belongs to (we keep no per-token grants). */
export function registerRevocationEndpoint(instance: FastifyInstance, dependencies: RevocationDependencies): void {
  const { settings, clients } = dependencies;
  const path = `${settings.basePath}/oauth/revoke`;
  instance.post(path, { schema: { headers: CLIENT_AUTHENTICATION_HEADERS, body: FORM_BODY } }, async (request, reply) => {
    allowCors(reply);
    const form = formOf(request);
    const authorization = request.headers.authorization;
    try {
      const client = await clients.authenticate(form, authorization);
      const token = form.get('token');
      if (!token) throw new OAuthProblem('invalid_request', 'token is required');
      await revoke(dependencies, token, client, form.get('token_type_hint'));
      // RFC 7009 §2.2: 200 whether or not the token was valid.
      return sendOAuthJson(reply, 200, {});
    } catch (error) {
      if (error instanceof OAuthProblem)
        return sendOAuthProblem(reply, error, { basicChallenge: authorization?.toLowerCase().startsWith('basic ') });
      throw error;
    }
  });
  registerPreflight(instance, path, 'POST');
}

async function revoke(
  { sessions, refreshTokens, tokens }: RevocationDependencies,
  token: string,
  client: OAuthClient,
  hint: string | null,
): Promise<void> {
  const revokeIfOwned = async (sessionId: string, clientId: string): Promise<void> => {
    if (clientId !== client.clientId) return;
    const session = await sessions.find(sessionId);
    if (session && session.revokedAt === null) await sessions.revoke(sessionId, 'revoked by the client');
  };
  const asRefresh = async (): Promise<boolean> => {
    const stored = await refreshTokens.find(token);
    if (stored) await revokeIfOwned(stored.sessionId, stored.clientId);
    return stored !== undefined;
  };
  if (hint !== 'access_token' && (await asRefresh())) return;
  try {
    const claims = await tokens.verify(token, { ignoreExpiry: true });
    await revokeIfOwned(claims.sid, claims.client_id);
    return;
  } catch (error) {
    if (!(error instanceof TokenRejected)) throw error;
  }
  if (hint === 'access_token') await asRefresh();
}
