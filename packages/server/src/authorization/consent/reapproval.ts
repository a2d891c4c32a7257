import { inUsePublication, type Lockfile } from '@gateway/core';
import type { SessionTool } from '../stores/sessions.js';

/**
 * Re-approval (docs/authorization.md › Re-approval). A session holds the fingerprints the person saw;
 * a later publication can change or drop a tool, and then the approval of that tool is stale. /mcp asks
 * the client for a new approval with the OAuth step-up challenge, naming each stale tool as the scope
 * `tools:<name>`; /authorize reads the same scope to tick those tools on the consent page.
 */
export const TOOL_SCOPE_PREFIX = 'tools:';

export function toolScope(name: string): string {
  return `${TOOL_SCOPE_PREFIX}${name}`;
}

/** A session's tool as an administrator sees it: stale when the published operation is not the one approved. */
export type SessionToolStatus = SessionTool & ({ stale?: undefined } | { stale: true; staleReason: string; currentFingerprint?: string });

/** Tool name → fingerprint of every callable tool of the in-use publications of a lock. */
export function publishedFingerprints(lock: Lockfile): Map<string, string> {
  const fingerprints = new Map<string, string>();
  for (const source of lock.sources) {
    const publication = inUsePublication(source);
    if (!publication) continue;
    for (const operation of publication.operations) {
      if (operation.selected && operation.status === 'supported') fingerprints.set(operation.tool, operation.fingerprint);
    }
  }
  return fingerprints;
}

/** Marks each approved tool whose published fingerprint differs (changed) or that is no longer published. */
export function markStaleTools(tools: readonly SessionTool[], published: ReadonlyMap<string, string>): SessionToolStatus[] {
  return tools.map((tool) => {
    const current = published.get(tool.name);
    if (current === undefined) return { ...tool, stale: true, staleReason: 'no longer published' };
    if (current !== tool.fingerprint) {
      return {
        ...tool,
        stale: true,
        staleReason: `changed since approval (now ${current}); the client must ask the person to approve it again`,
        currentFingerprint: current,
      };
    }
    return { ...tool };
  });
}
