import type { SessionRecord } from '../stores/ports.js';
import type { ConsentOffer, ConsentTool } from './consent-tool.js';
import type { ReapprovalNote } from './pages.js';
import { TOOL_SCOPE_PREFIX } from './reapproval.js';

/** What a person picks on the consent page: tool names, login ids and a time limit in seconds. */
export interface ConsentChoices {
  tools: string[];
  logins: string[];
  lifetime?: number;
}

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

/**
 * What the page starts with. Nothing, for a first approval. When the person already has an open session with
 * this application (it comes back for a re-approval: a step-up challenge named the changed tools in `scope`,
 * docs/authorization.md › Re-approval), the earlier choices are kept: its unchanged tools and their logins are
 * ticked and its time limit is preselected. A tool that changed since is shown with what changed and left
 * unticked: ticking it is the approval of a change, which one click on Allow must not give unread.
 */
export function initialChoices(
  requestedTools: readonly string[],
  tools: readonly ConsentTool[],
  previous: SessionRecord | undefined,
  context: { changesSince: ConsentOffer['changesSince']; lifetimeChoicesSeconds: readonly number[] },
): { choices: ConsentChoices; reapproval: ReapprovalNote[] } {
  // Blocked tools are shown but never ticked.
  const offered = new Map(tools.filter((tool) => unavailableChoice(tool) === undefined).map((tool) => [tool.name, tool] as const));
  const previousTools = (previous?.tools ?? []).filter((tool) => offered.has(tool.name));
  // Every tool of the earlier approval that changed since is marked, not only the one the client named.
  const reapproval = previousTools
    .filter((tool) => tool.fingerprint !== offered.get(tool.name)!.fingerprint)
    .map((tool) => ({ name: tool.name, changes: context.changesSince(tool.name, tool.fingerprint) ?? null }));
  const changed = new Set(reapproval.map((note) => note.name));
  const requested = requestedTools.filter((name) => offered.has(name));
  const names = [...new Set([...previousTools.map((tool) => tool.name), ...requested])].filter((name) => !changed.has(name));
  const usable = new Set(names.flatMap((name) => offered.get(name)!.logins));
  const logins = (previous?.logins ?? []).filter((login) => usable.has(login));
  const completed = completeLogins(
    names.map((name) => offered.get(name)!),
    logins,
  );
  const earlierLifetime = previous ? Math.round((previous.expiresAt - previous.createdAt) / 1000) : undefined;
  return {
    choices: {
      tools: names,
      logins: 'logins' in completed ? completed.logins : logins,
      ...(earlierLifetime !== undefined && context.lifetimeChoicesSeconds.includes(earlierLifetime) ? { lifetime: earlierLifetime } : {}),
    },
    reapproval,
  };
}

/**
 * The submitted choices as a session can hold them, or the problem to show on the page: every tool must be one the
 * page showed and not blocked, at least one tool, every login used by a chosen tool, each chosen tool with the login
 * it needs (a session with a tool but without its login would fail every call: LOGIN_NOT_IN_SESSION), and one of
 * the offered time limits.
 */
export function acceptedChoices(
  submitted: ConsentChoices,
  shownTools: readonly ConsentTool[],
  context: { knownLogins: ReadonlySet<string>; lifetimeChoicesSeconds: readonly number[] },
): { tools: ConsentTool[]; logins: string[]; lifetime: number } | { problem: string } {
  const shown = new Map(shownTools.map((tool) => [tool.name, tool] as const));
  const chosen: ConsentTool[] = [];
  for (const name of submitted.tools) {
    const tool = shown.get(name);
    if (!tool) return { problem: `The tool ${name} is not offered; choose again.` };
    const unavailable = unavailableChoice(tool);
    if (unavailable) return { problem: unavailable };
    chosen.push(tool);
  }
  if (chosen.length === 0) return { problem: 'Choose at least one tool, or Deny.' };
  const usable = new Set(chosen.flatMap((tool) => tool.logins));
  const stray = submitted.logins.find((login) => !usable.has(login) || !context.knownLogins.has(login));
  if (stray) return { problem: `The login ${stray} is not used by the chosen tools; untick it or choose the tool that uses it.` };
  const completed = completeLogins(chosen, submitted.logins);
  if ('problem' in completed) return completed;
  const lifetime = submitted.lifetime ?? Number.NaN;
  if (!context.lifetimeChoicesSeconds.includes(lifetime)) return { problem: 'Choose one of the offered time limits.' };
  return { tools: chosen, logins: completed.logins, lifetime };
}
