import type { ConsentTool } from './consent-tool.js';
import { TOOL_SCOPE_PREFIX } from './reapproval.js';

/** The tool names an authorization request's `scope` asks for (`tools:<name>`); other scope values are ignored (RFC 6749 §3.3). */
export function toolsInScope(scope: string | null): string[] {
  if (!scope) return [];
  const names = new Set<string>();
  for (const token of scope.split(' '))
    if (token.startsWith(TOOL_SCOPE_PREFIX) && token.length > TOOL_SCOPE_PREFIX.length) names.add(token.slice(TOOL_SCOPE_PREFIX.length));
  return [...names].slice(0, 1000);
}

/**
 * Adds the logins the chosen tools need (docs/authorization.md › Logins): a tool that can use exactly
 * one login gets it ticked; a tool with several alternatives, none of them ticked, is a problem the person
 * must settle (the gateway does not pick a credential for them). Tools without logins need none.
 */
export function completeLogins(chosen: readonly ConsentTool[], ticked: readonly string[]): { logins: string[] } | { problem: string } {
  const logins = new Set(ticked);
  for (const tool of chosen) {
    if (tool.logins.length === 0 || tool.logins.some((login) => logins.has(login))) continue;
    if (tool.logins.length === 1) {
      logins.add(tool.logins[0]!);
      continue;
    }
    return { problem: `The tool ${tool.name} can use the login ${tool.logins.join(' or ')}: tick the one it should use.` };
  }
  return { logins: [...logins].sort() };
}

/** Why a tool shown on the consent page cannot be chosen (drift blocks it: docs/drift.md), or undefined when it can. */
export function unavailableChoice(tool: ConsentTool): string | undefined {
  return tool.blocked === undefined ? undefined : `The tool ${tool.name} cannot be approved now: ${tool.blocked}. Untick it.`;
}
