/**
 * How the CLI reads a source's live description: OpenAPI documents through core, MCP servers through the
 * @gateway/runtime client (core stays pure: the lister is injected here).
 */
import { otherSourcesToolNames, type FetchText, type LiveImportOptions, type LoadedConfig, type Lockfile } from '@gateway/core';
import { createMcpToolLister, createVault, type Vault } from '@gateway/runtime';

/** A vault opened only when a secret is first read: a source without secrets needs no vault key. */
function lazyVault(loaded: LoadedConfig): Vault {
  let opened: Promise<Vault> | undefined;
  const open = (): Promise<Vault> => (opened ??= createVault(loaded));
  return {
    provider: loaded.config.vault?.provider ?? 'file',
    get: async (name) => (await open()).get(name),
    set: async (name, value) => (await open()).set(name, value),
    create: async (name, value) => (await open()).create(name, value),
    delete: async (name) => (await open()).delete(name),
    list: async () => (await open()).list(),
  };
}

/** Everything importLiveSource needs from the CLI: the guarded document fetcher (network.ts), the MCP lister, the other sources' names. */
export function liveImportOptions(loaded: LoadedConfig, lock: Lockfile, sourceName: string, fetchText: FetchText): LiveImportOptions {
  return {
    fetchText,
    listMcpTools: createMcpToolLister({ vault: lazyVault(loaded) }),
    otherToolNames: otherSourcesToolNames(lock, sourceName),
  };
}
