import type { FastifyInstance, FastifyReply } from 'fastify';
import { addressBucket } from '@gateway/runtime';
import { toolsInScope } from '../consent/choices.js';
import { errorPage } from '../signin/pages.js';
import { findRedirectUri, OAuthProblem, type OAuthClient } from '../oauth/clients.js';
import { oauthQuery, queryOf, repeatedParameter } from '../oauth/http.js';
import { RateLimiter } from '../oauth/rate-limit.js';
import type { BrowserFlow } from './browser-flow.js';
import type { AuthorizationDependencies } from './dependencies.js';

/** OAuth 2.1 §4.1.1 with RFC 8707 `resource`; other parameters are ignored (RFC 6749 §3.1). */
const AUTHORIZE_QUERY = oauthQuery(
  'response_type',
  'client_id',
  'redirect_uri',
  'state',
  'scope',
  'code_challenge',
  'code_challenge_method',
  'resource',
);

/** RFC 7636 §4.2: BASE64URL(SHA256(verifier)) is exactly 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9\-_]{43}$/;

/** The authorization endpoint (OAuth 2.1 §4.1.1): validates the request, holds it, and sends the browser to consent. */
export function registerAuthorizationEndpoint(
  instance: FastifyInstance,
  { settings, clients, throttles }: Pick<AuthorizationDependencies, 'settings' | 'clients' | 'throttles'>,
  flow: BrowserFlow,
): void {
  const { pending, send, redirectBack, ensureSession, tooManyRequests, consentUrl } = flow;
  const limits = settings.authorize;
  // /authorize is unauthenticated and each request holds memory for minutes: both limits apply.
  const perAddress = new RateLimiter('authorize-address', limits.perAddressPerMinute, throttles);
  const perClient = new RateLimiter('authorize-client', limits.perClientPerMinute, throttles);

  instance.get(`${settings.basePath}/authorize`, { schema: { querystring: AUTHORIZE_QUERY } }, async (request, reply) => {
    const addressWait = await perAddress.take(addressBucket(request.ip));
    if (addressWait > 0) return tooManyRequests(reply, addressWait, 'This address has started too many sign-in requests.');
    const query = queryOf(request);
    // Until client and redirect URI are verified, problems are shown here and never redirected (RFC 9700 §4.11).
    const unsafe = repeatedParameter(query, ['client_id', 'redirect_uri']);
    if (unsafe) return send(reply, errorPage('This sign-in request is invalid', `The parameter ${unsafe} was sent more than once.`));
    const clientId = query.get('client_id');
    if (!clientId)
      return send(reply, errorPage('This sign-in request is invalid', 'The application did not say who it is (client_id is missing).'));
    let client: OAuthClient;
    try {
      client = await clients.find(clientId);
    } catch (error) {
      if (error instanceof OAuthProblem) {
        return send(reply, errorPage('Unknown application', `This gateway cannot verify the application: ${error.description}`));
      }
      throw error;
    }
    const requestedRedirect = query.get('redirect_uri') ?? undefined;
    const redirectUri = findRedirectUri(client, requestedRedirect);
    if (!redirectUri) {
      return send(
        reply,
        errorPage(
          'Unregistered return address',
          requestedRedirect === undefined
            ? 'The application did not say where to return (redirect_uri), and it has several registered addresses.'
            : `The application asked to return to ${requestedRedirect}, which is not one of its registered addresses. For your safety ` +
                `you were not sent there.`,
        ),
      );
    }
    const state = query.get('state');
    const fail = (error: string, description: string): FastifyReply =>
      redirectBack(reply, { redirectUri, state }, { error, error_description: description });
    const repeated = repeatedParameter(query, ['response_type', 'state', 'code_challenge', 'code_challenge_method', 'resource', 'scope']);
    if (repeated) return fail('invalid_request', `${repeated} was sent more than once`);
    if (query.get('response_type') !== 'code') return fail('unsupported_response_type', 'only response_type=code is supported');
    const challenge = query.get('code_challenge');
    const method = query.get('code_challenge_method');
    // OAuth 2.1 §4.1.1 / RFC 9700 §2.1.1: PKCE is required and only S256 is accepted (a missing method means plain).
    if (!challenge) return fail('invalid_request', 'code_challenge is required (PKCE S256)');
    if (method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256');
    if (!S256_CHALLENGE.test(challenge)) return fail('invalid_request', 'code_challenge is not a base64url SHA-256 value');
    // RFC 8707 + MCP › Resource Parameter: the token is for this gateway's /mcp and nothing else.
    const resource = query.get('resource');
    if (resource === null) return fail('invalid_target', `resource is required and must be ${settings.mcpUrl}`);
    if (resource !== settings.mcpUrl) return fail('invalid_target', `resource must be ${settings.mcpUrl}`);
    const clientWait = await perClient.take(client.clientId);
    if (clientWait > 0) return tooManyRequests(reply, clientWait, 'This application has started too many sign-in requests.');
    const browser = await ensureSession(request, reply);
    const added = await pending.add({
      client,
      redirectUri,
      redirectUriParameter: requestedRedirect ?? '',
      state,
      codeChallenge: challenge,
      resource,
      browserId: browser.browserId,
      requestedTools: toolsInScope(query.get('scope')),
    });
    if (typeof added === 'string') {
      // Every held request is one a person is working on: refuse rather than end theirs.
      return tooManyRequests(
        reply,
        60,
        added === 'client-full'
          ? 'This application has too many sign-in requests in progress.'
          : 'The gateway has too many sign-in requests in progress.',
      );
    }
    return reply.status(303).header('cache-control', 'no-store').header('location', consentUrl(added.id)).send();
  });
}
