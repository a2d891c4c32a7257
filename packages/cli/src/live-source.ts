/**
 * How the CLI reads a source's live description: OpenAPI documents through core, MCP servers through the
 * @gateway/runtime client (core stays pure: the lister is injected here).
 */
import { otherSourcesToolNames, type LiveImportOptions, type LoadedConfig, type Lockfile } from '@gateway/core';
import { createMcpToolLister, createVault, type Vault } from '@gateway/runtime';

/** A vault opened only when a secret is first read: a source without secrets needs no vault key. */
function lazyVault(loaded: LoadedConfig): Vault {
  let opened: Promise<Vault> | undefined;
  const open = (): Promise<Vault> => (opened ??= createVault(loaded));
  return {
    provider: loaded.config.vault?.provider ?? 'file',
    get: async (name) => (await open()).get(name),
    set: async (name, value) => (await open()).set(name, value),
    delete: async (name) => (await open()).delete(name),
    list: async () => (await open()).list(),
  };
}

export function liveImportOptions(loaded: LoadedConfig, lock: Lockfile, sourceName: string): LiveImportOptions {
  return {
    listMcpTools: createMcpToolLister({ vault: lazyVault(loaded) }),
    otherToolNames: otherSourcesToolNames(lock, sourceName),
  };
}
