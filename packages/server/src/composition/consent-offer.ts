/** What the consent page offers, read from the publication registry: the tools, and what changed in one since approval. */
import { describeToolChanges, type LoadedConfig } from '@gateway/core';
import type { ConsentTool } from '../authorization/index.js';
import { mcpToolLogins, operationLogins } from '../credentials/index.js';
import type { PublicationRegistry } from '../publications/registry.js';

/**
 * The tools of the in-use publications, as the consent page shows them: a tool blocked by drift is listed too, with
 * its reason, and cannot be chosen (never silently left out).
 */
export function consentTools(registry: PublicationRegistry, loaded: LoadedConfig): ConsentTool[] {
  const snapshot = registry.snapshot();
  const tools: ConsentTool[] = [];
  for (const name of snapshot.names) {
    const tool = snapshot.tools.get(name)!;
    const blocked = registry.blockedReason(tool.sourceName, name);
    const approvers = tool.entry.approvers && tool.entry.approvers.length > 0 ? [...tool.entry.approvers] : null;
    tools.push({
      ...(blocked === undefined ? {} : { blocked }),
      ...(tool.entry.approval === 'each-call' ? { eachCall: { approvers } } : {}),
      name,
      title: tool.entry.title,
      description: tool.entry.description,
      source: tool.sourceName,
      readOnly: tool.annotations.readOnlyHint,
      destructive: tool.annotations.destructiveHint === true,
      fingerprint: tool.entry.fingerprint,
      target:
        tool.kind === 'openapi'
          ? { kind: 'http', method: tool.operation.method, path: tool.operation.path }
          : { kind: 'mcp', server: tool.sourceName, tool: tool.mcpTool.name },
      logins: tool.kind === 'openapi' ? operationLogins(loaded, tool.sourceName, tool.operation) : mcpToolLogins(loaded, tool.sourceName),
    });
  }
  return tools;
}

/** What changed in a tool since the approved version, in the words of `gateway diff` (core's describeToolChanges). */
export function changesSince(registry: PublicationRegistry, toolName: string, approvedFingerprint: string): string[] | undefined {
  const current = registry.snapshot().tools.get(toolName);
  const approved = registry.servedEntry(toolName, approvedFingerprint);
  if (!current || !approved) return undefined;
  return describeToolChanges(approved, current.entry).map((change) => change.message);
}
