import { readFile } from 'node:fs/promises';
import { GatewayError } from '@gateway/core';
import { createClientMetadataFetcher } from './oauth/client-metadata-document.js';
import { createClientRegistry } from './oauth/clients.js';
import { authSettings } from './oauth/settings.js';
import { loadSigningKeys } from './oauth/signing-keys.js';
import { AccessTokens } from './oauth/tokens.js';
import { PeopleDirectory } from '@gateway/runtime';
import { BrowserSessions } from './signin/browser-sessions.js';
import { createOidcSignIn } from './signin/oidc.js';
import { createMcpAuthorizer } from './mcp-authorizer.js';
import { authorizationServerPlugin } from './plugin.js';
import { SessionStore } from './stores/session-store.js';
import type { AuthorizationComponents, AuthorizationContext } from './types.js';

export type { AuthorizationComponents, AuthorizationContext } from './types.js';
export type { ConsentTool } from './consent/consent-tool.js';
export { bearerChallenge } from './mcp-authorizer.js';
export { SessionStore, sessionState, type SessionRecord, type SessionState, type SessionTool } from './stores/session-store.js';
export { markStaleTools, publishedFingerprints, toolScope, TOOL_SCOPE_PREFIX, type SessionToolStatus } from './consent/reapproval.js';

export { authSettings, type AuthSettings } from './oauth/settings.js';
export { SIGNING_KEYS_SECRET } from './oauth/signing-keys.js';
export type { AuthorizationPorts, Throttles } from './stores/ports.js';
export { authorizationMigrations, openSqliteAuthorizationStores } from './stores/sqlite/index.js';

const PURGE_INTERVAL_MS = 15 * 60 * 1000;

/**
 * The gateway's own OAuth 2.1 authorization server for MCP clients (docs/authorization.md): discovery
 * documents, client registration (metadata documents, dynamic, configured), /authorize with sign-in and
 * consent, the token and revocation endpoints, and the /mcp authorizer that enforces the sessions.
 */
export async function createAuthorization(context: AuthorizationContext): Promise<AuthorizationComponents> {
  const settings = authSettings(context.loaded, context.mcpUrl);
  const store = new SessionStore(context.stores);
  const keys = await loadSigningKeys(context.vault, {
    maxAgeDays: context.rotateSigningKeys === false ? Number.POSITIVE_INFINITY : settings.signingKeyMaxAgeDays,
    warn: (message) => context.logger.warn(message),
    ...(context.requireSharedSigningKeys ? { requireShared: true } : {}),
  });
  const caCertificates = [...(context.clientMetadataCaCertificates ?? [])];
  for (const file of settings.clientMetadata.caCertificateFiles) {
    try {
      caCertificates.push(await readFile(file, 'utf8'));
    } catch (error) {
      throw new GatewayError(
        'AUTH_CA_CERTIFICATE_UNREADABLE',
        `auth.clientMetadata.caCertificates: cannot read ${file}: ${(error as Error).message}`,
      );
    }
  }
  const metadataDocuments = createClientMetadataFetcher({
    allowPrivateNetworks: context.loaded.config.network?.allowPrivateNetworks ?? [],
    caCertificates,
    maxBytes: settings.clientMetadata.maxBytes,
    timeoutMs: settings.clientMetadata.timeoutMs,
    maxCacheSeconds: settings.clientMetadata.maxCacheSeconds,
  });
  const clients = createClientRegistry({ settings, registrations: store.clients, vault: context.vault, metadataDocuments });
  const tokens = new AccessTokens(keys, settings.issuer, settings.mcpUrl, settings.accessTokenSeconds);
  const authorizer = createMcpAuthorizer({
    tokens,
    sessions: store.sessions,
    resourceMetadataUrl: settings.endpoints.protectedResourceMetadata,
    ...(context.changes ? { changes: context.changes } : {}),
    onAnnounceError: (sessionId, error) =>
      context.logger.warn({ session: sessionId, error: (error as Error)?.message }, 'announcing a revoked session failed'),
  });
  const people = new PeopleDirectory(settings.peopleFile);
  const { throttles, ephemeral } = context.stores;
  const browserSessions = new BrowserSessions({ isHttps: settings.isHttps, lifetimeSeconds: settings.browserSessionSeconds }, ephemeral);
  const oidc = settings.oidc ? createOidcSignIn(settings.oidc, context.vault) : undefined;

  await store.purge();
  const purgeTimer = setInterval(() => {
    store.purge().catch((error: unknown) => {
      context.logger.warn({ error: (error as Error).message }, 'purging expired authorization data failed');
    });
  }, PURGE_INTERVAL_MS);
  purgeTimer.unref();

  const plugin = authorizationServerPlugin({
    settings,
    clients,
    sessions: store.sessions,
    codes: store.codes,
    refreshTokens: store.refreshTokens,
    keys,
    tokens,
    logger: context.logger,
    offer: context,
    people,
    browserSessions,
    ...(oidc ? { oidc } : {}),
    ephemeral,
    throttles,
    ...(context.personLogins ? { personLogins: context.personLogins } : {}),
  });

  return {
    plugin,
    authorizer,
    sessions: store,
    throttles,
    browser: {
      sessions: browserSessions,
      people,
      basePath: settings.basePath,
      isSignInEnabled: settings.localAccountsEnabled || Boolean(settings.oidc),
    },
    async close() {
      clearInterval(purgeTimer);
      await metadataDocuments.close();
    },
  };
}
