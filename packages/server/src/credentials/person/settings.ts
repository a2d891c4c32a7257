/**
 * The per-person logins gateway.yaml configures (`type: oauthPerson`), each with its provider client: one
 * authorization code client per login, sharing nothing with another login's (its own scopes and resource).
 */
import type { Dispatcher } from 'undici';
import { GatewayError, loginIdOf, personCredentialsOf, type LoadedConfig, type OAuthPersonCredentialConfig } from '@gateway/core';
import { createAuthorizationCodeClient, type AuthorizationCodeClient, type Vault } from '@gateway/runtime';

export interface PersonLoginSettings {
  /** `<source>/<scheme>` (an MCP source: `<source>/mcp`). */
  login: string;
  credential: OAuthPersonCredentialConfig;
  /** The provider as pages name it: `label`, else the issuer's (or authorization endpoint's) host. */
  label: string;
  client: AuthorizationCodeClient;
}

/** Every `oauthPerson` credential of the config, by login id. */
export function personLoginSettings(
  loaded: LoadedConfig,
  vault: Vault,
  dispatcher: Dispatcher | undefined,
): Map<string, PersonLoginSettings> {
  const settings = new Map<string, PersonLoginSettings>();
  for (const [sourceName, source] of Object.entries(loaded.config.sources)) {
    for (const { scheme, credential } of personCredentialsOf(source)) {
      const login = loginIdOf(sourceName, scheme);
      // An MCP server's tokens are for that server: its URL is the resource (MCP authorization, RFC 8707).
      const resource = credential.resource ?? (source.kind === 'mcp' ? source.url : undefined);
      const client = createAuthorizationCodeClient(
        {
          ...(credential.issuer ? { issuer: credential.issuer } : {}),
          ...(credential.authorizationUrl ? { authorizationUrl: credential.authorizationUrl } : {}),
          ...(credential.tokenUrl ? { tokenUrl: credential.tokenUrl } : {}),
          clientId: credential.clientId,
          scopes: credential.scopes ?? [],
          ...(resource ? { resource } : {}),
        },
        {
          requester: login,
          clientSecret: async () => {
            const value = await vault.get(credential.secret);
            if (!value) {
              throw new GatewayError(
                'CREDENTIAL_SECRET_MISSING',
                `the login ${login} needs the client secret '${credential.secret}', which the vault does not hold; store it with ` +
                  `\`gateway secrets set ${credential.secret}\``,
                { details: { login, secret: credential.secret } },
              );
            }
            return value;
          },
          ...(dispatcher ? { dispatcher } : {}),
        },
      );
      const label = credential.label ?? new URL(credential.issuer ?? credential.authorizationUrl!).host;
      settings.set(login, { login, credential, label, client });
    }
  }
  return settings;
}
