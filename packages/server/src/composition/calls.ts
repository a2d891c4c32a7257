/**
 * What executes a call: the SSRF-guarded HTTP agents (one per source, one for token endpoints), the per-person
 * logins, the credential resolver, the MCP upstream pool and the executor over them.
 */
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { LoadedConfig } from '@gateway/core';
import { createGuardedAgent, type Vault } from '@gateway/runtime';
import { createCredentialResolver } from '../credentials/index.js';
import { startPersonLogins, type PersonLogins } from '../credentials/person/index.js';
import { createExecutor, sourceLimits, type Executor } from '../execute/executor.js';
import { McpUpstreamPool } from '../execute/mcp-upstream.js';
import type { EphemeralState } from '../store/ephemeral-state.js';
import type { GatewayStorage } from './storage.js';
import type { Closers } from './closers.js';

export interface CallArea {
  executor: Executor;
  /** The agent of token endpoints and descriptions (drift re-reads them through it). */
  tokenAgent: Dispatcher;
  personLogins: PersonLogins | undefined;
  /** Present when a source is an MCP server; told when an upstream's tool list changed through `onToolListChanged`. */
  mcpUpstreams: McpUpstreamPool | undefined;
  /** Where the pool reports an upstream's `list_changed` (the MCP drift monitor, once started). */
  onToolListChanged(listener: (sourceName: string) => void): void;
}

export async function startCallArea(
  context: { loaded: LoadedConfig; vault: Vault; storage: GatewayStorage; ephemeral: EphemeralState; logger: Logger },
  closers: Closers,
): Promise<CallArea> {
  const { loaded, vault, logger } = context;
  const allowPrivateNetworks = loaded.config.network?.allowPrivateNetworks ?? [];
  const agents = new Map<string, Dispatcher>();
  const dispatcherFor = (sourceName: string): Dispatcher => {
    let agent = agents.get(sourceName);
    if (!agent) {
      agent = createGuardedAgent({ allowPrivateNetworks, connectTimeoutMs: sourceLimits(loaded, sourceName).connectMs });
      agents.set(sourceName, agent);
    }
    return agent;
  };
  const tokenAgent = createGuardedAgent({ allowPrivateNetworks });
  closers.add(async () => {
    await Promise.all([...agents.values(), tokenAgent].map((agent) => agent.close().catch(() => undefined)));
  });

  // OAuth per person (credentials/person/): links in the database, each person's tokens in the vault.
  const personLogins = await startPersonLogins({
    loaded,
    vault,
    accounts: context.storage.linkedAccounts(),
    // Processes sharing the storage refresh a person's token once (the lease), not once each.
    leases: context.storage.leases(),
    // A provider's callback may reach another process than the one that started the linking.
    ephemeral: context.ephemeral,
    dispatcher: tokenAgent,
    warn: (details, message) => logger.warn(details, message),
  });
  const credentials = createCredentialResolver({ loaded, vault, fetchDispatcher: tokenAgent, ...(personLogins ? { personLogins } : {}) });
  // MCP sources: each upstream is started or connected on its first call (docs/sources-mcp.md).
  const hasMcpSources = Object.values(loaded.config.sources).some((source) => source.kind === 'mcp');
  let listener: (sourceName: string) => void = () => undefined;
  const mcpUpstreams = hasMcpSources
    ? new McpUpstreamPool({
        loaded,
        vault,
        agent: createGuardedAgent({ allowPrivateNetworks }),
        logger,
        onToolListChanged: (sourceName) => listener(sourceName),
        // An MCP source whose credential is per person: each call carries its person's own token.
        ...(personLogins ? { personTokens: (person: string, login: string) => personLogins.accessToken(person, login) } : {}),
      })
    : undefined;
  if (mcpUpstreams) closers.add(() => mcpUpstreams.close());
  const executor = createExecutor({
    credentials,
    dispatcherFor,
    limitsFor: (sourceName) => sourceLimits(loaded, sourceName),
    ...(mcpUpstreams ? { mcpUpstreams } : {}),
  });
  return {
    executor,
    tokenAgent,
    personLogins,
    mcpUpstreams,
    onToolListChanged: (next) => {
      listener = next;
    },
  };
}
