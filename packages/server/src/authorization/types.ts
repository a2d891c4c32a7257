import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import type { LoadedConfig } from '@gateway/core';
import type { McpAuthorizer } from '../calls/caller.js';
import type { ConsentOffer } from './consent/consent-tool.js';
import type { AuthorizationDependencies } from './handlers/dependencies.js';
import type { McpRefusalCounts } from './mcp-refusals.js';
import type { AuthorizationPorts, Throttles } from './stores/ports.js';
import type { SessionStore } from './stores/session-store.js';
import type { PeopleDirectory, Vault } from '@gateway/runtime';
import type { BrowserSessions } from './signin/browser-sessions.js';
import type { ChangeFeed } from '../store/changes.js';

/** What the composition root gives the authorization area (with the tools and logins the consent page offers). */
export interface AuthorizationContext extends ConsentOffer {
  loaded: LoadedConfig;
  /**
   * The area's stores (./stores/ports.ts), built by an adapter's factory (`openSqliteAuthorizationStores`): with
   * workers, the throttles and the pages' ephemeral state are the database's too, so any worker continues a flow.
   */
  stores: AuthorizationPorts;
  vault: Vault;
  logger: FastifyBaseLogger;
  /** The canonical `/mcp` URL (the token audience and the RFC 8707 resource). */
  mcpUrl: string;
  /**
   * Optional: PEM certificates trusted (besides the system roots and `auth.clientMetadata.caCertificates`)
   * when fetching Client ID Metadata Documents. For tests and embedders; operators use the config key.
   */
  clientMetadataCaCertificates?: string[];
  /**
   * Several worker processes share this database (`gateway serve --workers N`): signing keys must come from
   * (or go to) the vault.
   */
  requireSharedSigningKeys?: boolean;
  /** Per-person logins (`oauthPerson`): the connect page and "Connect" on the consent page; absent when none. */
  personLogins?: AuthorizationDependencies['personLogins'];
  /** False: never rotate a due signing key at start (a worker that others, already running, must agree with). */
  rotateSigningKeys?: boolean;
  /**
   * The change feed shared by every process on the database: a revocation here is announced (`session-ended`), and
   * one announced elsewhere ends this process's streams of that session within a second.
   */
  changes?: ChangeFeed;
}

export interface AuthorizationComponents {
  /** OAuth endpoints, metadata, sign-in and consent pages. */
  plugin: FastifyPluginAsync;
  /** The /mcp bearer check; `refusals()` counts the requests it refused, by reason (`GET /admin/status`). */
  authorizer: McpAuthorizer & { refusals(): McpRefusalCounts };
  /** The approved sessions (the admin API lists and revokes them through this same store). */
  sessions: SessionStore;
  /**
   * Where the throttles keep their counts: this process's memory, or the database when workers serve together.
   * The admin API counts wrong tokens there too.
   */
  throttles: Throttles;
  /** The browser sessions of the sign-in pages and the people file: what the console signs people in with. */
  browser: { sessions: BrowserSessions; people: PeopleDirectory; basePath: string; isSignInEnabled: boolean };
  close(): Promise<void>;
}
