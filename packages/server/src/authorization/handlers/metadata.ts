import type { FastifyInstance, FastifyReply } from 'fastify';
import { TOKEN_ENDPOINT_AUTH_METHODS } from '../oauth/clients.js';
import { NO_PARAMETERS } from '../../http/route-schemas.js';
import { allowCors, registerPreflight } from '../oauth/http.js';
import type { AuthSettings } from '../oauth/settings.js';
import type { AuthorizationDependencies } from './dependencies.js';

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

/** Discovery documents are public and change only with the configuration: cacheable for five minutes. */
function sendDocument(reply: FastifyReply, body: unknown): FastifyReply {
  allowCors(reply);
  return reply.header('cache-control', 'public, max-age=300').type('application/json; charset=utf-8').send(JSON.stringify(body));
}

/** The discovery documents (RFC 9728, RFC 8414, OIDC Discovery) and the JWKS the access tokens verify with. */
export function registerMetadataEndpoints(
  instance: FastifyInstance,
  { settings, keys }: Pick<AuthorizationDependencies, 'settings' | 'keys'>,
): void {
  const base = settings.basePath;
  // RFC 9728 §3.1: path-inserted well-known URL for /mcp, and the root one for clients that try it.
  const resourcePath = new URL(settings.endpoints.protectedResourceMetadata).pathname;
  for (const path of new Set([resourcePath, '/.well-known/oauth-protected-resource'])) {
    instance.get(path, { schema: NO_PARAMETERS }, async (_request, reply) => sendDocument(reply, protectedResourceMetadata(settings)));
    registerPreflight(instance, path, 'GET');
  }
  // RFC 8414 §3.1 inserts the issuer path after the well-known prefix; OIDC Discovery §4 appends it.
  const metadataPaths = new Set([
    `/.well-known/oauth-authorization-server${base}`,
    `/.well-known/openid-configuration${base}`,
    `${base}/.well-known/openid-configuration`,
  ]);
  for (const path of metadataPaths) {
    instance.get(path, { schema: NO_PARAMETERS }, async (_request, reply) => sendDocument(reply, authorizationServerMetadata(settings)));
    registerPreflight(instance, path, 'GET');
  }
  instance.get(`${base}/oauth/jwks.json`, { schema: NO_PARAMETERS }, async (_request, reply) => sendDocument(reply, keys.jwks()));
  registerPreflight(instance, `${base}/oauth/jwks.json`, 'GET');
}
