/**
 * Real OpenID providers and a protected API on loopback, for tests of sign-in and OAuth per person: oidc-provider
 * (development sign-in and consent screens: any account name, any password) as the company's sign-in provider and
 * as the customer's authorization server, and an API that checks each bearer token with jose against the
 * provider's keys and answers with its `sub`.
 */
import { createServer, type Server } from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import Provider from 'oidc-provider';

export interface RunningProvider {
  issuer: string;
  /** Revokes a refresh token, as a person removing the application's access at the provider would. */
  revoke(token: string): Promise<number>;
  close(): Promise<void>;
}

async function listening(provider: { listen(port: number): Server }, port: number, issuer: string, secret: string, id: string) {
  const server = provider.listen(port);
  return {
    issuer,
    async revoke(token: string) {
      const response = await fetch(`${issuer}/token/revocation`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ token, token_type_hint: 'refresh_token' }).toString(),
      });
      return response.status;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The company's sign-in provider for `auth.oidc`: one client, `clientId`, whose callback is the gateway's. */
export async function startSignInProvider(options: {
  port: number;
  gatewayUrl: string;
  clientId: string;
  clientSecret: string;
}): Promise<RunningProvider> {
  const issuer = `http://127.0.0.1:${options.port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: options.clientId,
        client_secret: options.clientSecret,
        redirect_uris: [`${options.gatewayUrl}/signin/oidc/callback`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    async findAccount(_context: unknown, id: string) {
      return {
        accountId: id,
        async claims() {
          return { sub: id, email: `${id}@corp.example`, email_verified: true, name: id };
        },
      };
    },
    features: { devInteractions: { enabled: true }, revocation: { enabled: true } },
  } as never);
  return listening(provider, options.port, issuer, options.clientSecret, options.clientId);
}

/**
 * The customer's authorization server of a per-person login: one confidential client whose callback is the
 * gateway's `/connect/callback`, every account's `sub` its login name, JWT access tokens for `resource` (the API or
 * MCP server), refresh tokens, revocation. `onRefresh` is told of every refresh grant.
 */
export async function startPersonProvider(options: {
  port: number;
  gatewayUrl: string;
  clientId: string;
  clientSecret: string;
  resource: () => string;
  scope: string;
  onRefresh?: () => void;
}): Promise<RunningProvider> {
  const issuer = `http://127.0.0.1:${options.port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: options.clientId,
        client_secret: options.clientSecret,
        redirect_uris: [`${options.gatewayUrl}/connect/callback`],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'] },
    scopes: ['openid', 'offline_access', options.scope],
    async findAccount(_context: unknown, id: string) {
      return {
        accountId: id,
        async claims() {
          return { sub: id };
        },
      };
    },
    issueRefreshToken: async (_context: unknown, client: { grantTypeAllowed(type: string): boolean }) =>
      client.grantTypeAllowed('refresh_token'),
    features: {
      devInteractions: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: options.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_context: unknown, resource: string) => ({
          scope: options.scope,
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 600,
        }),
      },
    },
  } as never);
  provider.on('grant.success', (context: { oidc: { params?: { grant_type?: string } } }) => {
    if (context.oidc.params?.grant_type === 'refresh_token') options.onRefresh?.();
  });
  return listening(provider, options.port, issuer, options.clientSecret, options.clientId);
}

export interface WhoAmIApi {
  /** `http://127.0.0.1:<port>/`, the audience its tokens must name. */
  url: string;
  /** Every request it answered: its path and the verified `sub` (null on an unprotected path). */
  seen: Array<{ path: string; sub: string | null }>;
  close(): Promise<void>;
}

/**
 * The customer's API: `GET /whoami` answers the `sub` of a JWT access token it verified against the provider's
 * keys (401 otherwise); `GET /ping` and `POST /notes` need no token (`/notes` echoes its JSON body).
 */
export async function startWhoAmIApi(port: number, issuer: string): Promise<WhoAmIApi> {
  const url = `http://127.0.0.1:${port}/`;
  const keys = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  const seen: WhoAmIApi['seen'] = [];
  const json = (response: import('node:http').ServerResponse, status: number, body: unknown) =>
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0]!;
    if (path === '/ping') {
      seen.push({ path, sub: null });
      return json(response, 200, { pong: true });
    }
    if (path === '/notes' && request.method === 'POST') {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        seen.push({ path, sub: null });
        json(response, 201, { saved: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') });
      });
      return;
    }
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (!token || path !== '/whoami') return json(response, 401, { error: 'unauthorized' });
    jwtVerify(token, keys, { issuer, audience: url }).then(
      ({ payload }) => {
        seen.push({ path, sub: String(payload.sub) });
        json(response, 200, { sub: payload.sub });
      },
      () => json(response, 401, { error: 'unauthorized' }),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url,
    seen,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
