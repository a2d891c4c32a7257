import { findSource, inUsePublication, type normaliseMcpTools } from '@gateway/core';
import type { PublicationRegistry } from '../publications/registry.js';

/** What an upstream's live tool list does to the tools of the publication in use (mcp-monitor.ts). */
export interface McpToolsComparison {
  /** Tools that must stop being callable, with the sentence `tools/call` reports. */
  blocked: Map<string, string>;
  changed: string[];
  removed: string[];
  /** Upstream tools the publication neither offers nor records as left out. */
  added: string[];
}

/**
 * Compares the MCP tools a publication offers with the upstream's live list, matched by upstream name (so the
 * gateway's collision prefix does not matter): a changed fingerprint, a vanished tool, or a tool the importer now
 * refuses is blocked; the rest keeps working.
 */
export function compareMcpTools(
  snapshot: ReturnType<PublicationRegistry['snapshot']>,
  sourceName: string,
  live: ReturnType<typeof normaliseMcpTools>,
  publicationId: string | null,
): McpToolsComparison {
  const liveByName = new Map(live.operations.map((tool) => [tool.name, tool]));
  const blocked = new Map<string, string>();
  const changed: string[] = [];
  const removed: string[] = [];
  const offeredNames = new Set<string>();
  for (const tool of snapshot.tools.values()) {
    if (tool.sourceName !== sourceName || tool.kind !== 'mcp') continue;
    offeredNames.add(tool.mcpTool.name);
    const current = liveByName.get(tool.mcpTool.name);
    if (!current) {
      removed.push(tool.name);
      blocked.set(
        tool.name,
        `${tool.name} is no longer offered by the upstream MCP server of '${sourceName}'; it is refused until the source is ` +
          `re-imported, reviewed and published`,
      );
    } else if (current.fingerprint !== tool.mcpTool.fingerprint) {
      changed.push(tool.name);
      blocked.set(
        tool.name,
        `${tool.name} changed on the upstream MCP server of '${sourceName}' since ${publicationId ?? 'its publication'} was approved ` +
          '(its description, schemas or annotations differ); it is refused until re-imported, reviewed and published',
      );
    } else if (current.status === 'unsupported') {
      // The same tool, but the importer now refuses it (a publication older than the rule, e.g. hidden
      // characters in its text): treated as import treats it, not served until a reviewed publication drops it.
      changed.push(tool.name);
      blocked.set(
        tool.name,
        `${tool.name} on the upstream MCP server of '${sourceName}' is unsupported (${current.reason?.code ?? 'unsupported'}); ` +
          'it is refused until re-imported, reviewed and published',
      );
    }
  }
  // What the publication records as left out (unsupported or not selected), still the same tool, is not new.
  const lockSource = snapshot.lock ? findSource(snapshot.lock, sourceName) : undefined;
  const publication = lockSource?.kind === 'mcp' ? inUsePublication(lockSource) : undefined;
  const leftOut = new Set((publication?.notOffered ?? []).map((entry) => `${entry.operation}\u0000${entry.fingerprint}`));
  const added =
    publication?.documentDigest === live.documentDigest
      ? []
      : live.operations
          .filter((tool) => !offeredNames.has(tool.name) && !leftOut.has(`${tool.name}\u0000${tool.fingerprint}`))
          .map((tool) => tool.tool);
  return { blocked, changed, removed, added };
}
