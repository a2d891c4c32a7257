import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import type { LoadedConfig } from '@gateway/core';
import type { McpAuthorizer } from '../mcp/caller.js';
import type { Migration, SqliteDatabase } from '../store/database.js';
import type { Vault } from '../vault/vault.js';

/** A tool as the consent page shows it. */
export interface ConsentTool {
  name: string;
  title: string | null;
  description: string;
  source: string;
  readOnly: boolean;
  destructive: boolean;
  fingerprint: string;
  /** Login ids (`<source>/<scheme>`) that calling this tool may use (any one alternative suffices). */
  logins: string[];
}

/** A login (a configured credential) the person can allow a session to use. */
export interface ConsentLogin {
  /** `<source>/<securityScheme>`. */
  id: string;
  source: string;
  scheme: string;
  /** Credential type, e.g. apiKey, bearer, basic, oauthClientCredentials. */
  type: string;
}

/** What the composition root gives the authorization area. */
export interface AuthorizationContext {
  loaded: LoadedConfig;
  database: SqliteDatabase;
  vault: Vault;
  logger: FastifyBaseLogger;
  /** The canonical `/mcp` URL (the token audience and the RFC 8707 resource). */
  mcpUrl: string;
  /** The tools currently callable (in-use, not drifted), for the consent page. */
  listTools(): ConsentTool[];
  listLogins(): ConsentLogin[];
}

export interface AuthorizationComponents {
  /** OAuth endpoints, metadata, sign-in and consent pages. */
  plugin: FastifyPluginAsync;
  authorizer: McpAuthorizer;
  close(): Promise<void>;
}

/** Tables the authorization area needs (sessions, codes, clients…). */
export const authorizationMigrations: Migration[] = [];

/**
 * Placeholder until sign-in and consent land (issue 12): the product has no unauthenticated mode, so every
 * /mcp request is refused. Only the test harness may plug in another authorizer.
 */
export async function createAuthorization(context: AuthorizationContext): Promise<AuthorizationComponents> {
  return {
    plugin: async () => {},
    authorizer: {
      async authenticate() {
        return {
          ok: false,
          status: 401,
          headers: { 'WWW-Authenticate': `Bearer error="invalid_token", error_description="sign-in is not configured"` },
          body: { error: 'invalid_token', error_description: `no sessions can be opened yet for ${context.mcpUrl}` },
        };
      },
      isSessionOpen: () => false,
    },
    close: async () => {},
  };
}
