/**
 * The authorization area over its SQLite stores: sign-in, consent (offering the registry's tools and logins, and
 * what changed since an approval), tokens and the /mcp authorizer. With workers, a browser's next page (or a
 * client's retry) may reach another process: their state is shared through the database.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { LoadedConfig } from '@gateway/core';
import type { Vault } from '@gateway/runtime';
import { createAuthorization } from '../authorization/index.js';
import { listLogins } from '../credentials/index.js';
import type { PersonLogins } from '../credentials/person/index.js';
import type { PublicationRegistry } from '../publications/registry.js';
import type { EphemeralState } from '../store/ephemeral-state.js';
import type { GatewayStorage } from './storage.js';
import type { Closers } from './closers.js';
import { changesSince, consentTools } from './consent-offer.js';

export async function startAuthorization(
  context: {
    loaded: LoadedConfig;
    storage: GatewayStorage;
    /** The process's ephemeral state (the per-person logins use the same one). */
    ephemeral: EphemeralState;
    /** Several processes serve the same clients (workers, replicas on PostgreSQL): they verify each other's tokens. */
    servesTogether: boolean;
    vault: Vault;
    logger: FastifyBaseLogger;
    mcpUrl: string;
    registry: PublicationRegistry;
    personLogins: PersonLogins | undefined;
    worker?: { mayRotateSigningKeys: boolean };
  },
  closers: Closers,
) {
  const { loaded, registry, worker } = context;
  const stores = context.storage.authorizationStores({ sharedByWorkers: worker !== undefined, ephemeral: context.ephemeral });
  const authorization = await createAuthorization({
    loaded,
    stores,
    vault: context.vault,
    logger: context.logger,
    mcpUrl: context.mcpUrl,
    listTools: () => consentTools(registry, loaded),
    listLogins: () => listLogins(loaded),
    changesSince: (toolName, approvedFingerprint) => changesSince(registry, toolName, approvedFingerprint),
    ...(context.personLogins ? { personLogins: context.personLogins } : {}),
    changes: context.storage.changeFeed(),
    ...(context.servesTogether ? { requireSharedSigningKeys: true } : {}),
    ...(worker && !worker.mayRotateSigningKeys ? { rotateSigningKeys: false } : {}),
  });
  closers.add(() => authorization.close());
  return { authorization, stores };
}
