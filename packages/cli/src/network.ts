import type { FetchText, LoadedConfig } from '@gateway/core';
import { createGuardedAgent, guardedDocumentFetcher } from '@gateway/runtime';

/**
 * Runs `work` with the document fetcher the server's drift watcher uses (@gateway/runtime's SSRF guard, with
 * gateway.yaml's `network.allowPrivateNetworks`), so `gateway import`, `diff` and `publish` refuse exactly the
 * URLs the server refuses: a description URL or remote `$ref` on loopback, a private network or a cloud
 * metadata address, however it is spelled, and redirects to one.
 */
export async function withGuardedFetcher<T>(loaded: LoadedConfig, work: (fetchText: FetchText) => Promise<T>): Promise<T> {
  const agent = createGuardedAgent({ allowPrivateNetworks: loaded.config.network?.allowPrivateNetworks ?? [] });
  try {
    return await work(guardedDocumentFetcher(agent));
  } finally {
    await agent.close().catch(() => undefined);
  }
}
