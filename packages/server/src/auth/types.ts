import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import type { LoadedConfig } from '@gateway/core';
import type { LoginSummary } from '../credentials/index.js';
import type { McpAuthorizer } from '../calls/caller.js';
import type { SessionStore } from '../sessions/store.js';
import type { SqliteDatabase } from '../store/database.js';
import type { Vault } from '@gateway/runtime';

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
  /** The logins (configured credentials) the person can allow a session to use. */
  listLogins(): LoginSummary[];
  /**
   * Optional: PEM certificates trusted (besides the system roots and `auth.clientMetadata.caCertificates`)
   * when fetching Client ID Metadata Documents. For tests and embedders; operators use the config key.
   */
  clientMetadataCaCertificates?: string[];
  /**
   * Several worker processes share this database (`gateway serve --workers N`): signing keys must come from
   * (or go to) the vault, and the sign-in and consent pages keep their state in the database.
   */
  requireSharedSigningKeys?: boolean;
  /** False: never rotate a due signing key at start (a worker that others, already running, must agree with). */
  rotateSigningKeys?: boolean;
}

export interface AuthorizationComponents {
  /** OAuth endpoints, metadata, sign-in and consent pages. */
  plugin: FastifyPluginAsync;
  authorizer: McpAuthorizer;
  /** The approved sessions (the admin API lists and revokes them through this same store). */
  sessions: SessionStore;
  close(): Promise<void>;
}
