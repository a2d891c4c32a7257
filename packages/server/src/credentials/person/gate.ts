/**
 * The per-person logins' part of the call decision: a call whose chosen login (core's one login-choice rule) is
 * a per-person login the session's person has not linked, or whose link was removed (revoked at the provider,
 * unlinked), is not sent upstream. The decision answers "a person must act first" with the connect page, bound
 * to that person, session and login.
 *
 * A linked login's token is made usable here, before the call goes on: one about to expire is refreshed now, so
 * a grant revoked at the provider (`invalid_grant`, which removes the link) is found by the decision and this very
 * call asks the person to link again, rather than failing in the executor.
 */
import {
  chooseLoginAlternative,
  loginAlternativesOf,
  mcpLoginAlternatives,
  type LoadedConfig,
  type LoginAlternative,
  type PendingPersonAction,
} from '@gateway/core';
import type { McpCaller } from '../../calls/caller.js';
import type { PersonActionGate } from '../../calls/pipeline.js';
import type { IndexedTool } from '../../publications/registry.js';
import type { ConnectTicketClaims } from './connect-tickets.js';
import type { PersonLoginSettings } from './settings.js';

export interface PersonLoginGateOptions {
  loaded: LoadedConfig;
  settings: ReadonlyMap<string, PersonLoginSettings>;
  isLinked(person: string, login: string): boolean;
  /** Whether the store holds the link (read now, the process's cache filled from it): when `isLinked` said no. */
  findLinked(person: string, login: string): Promise<boolean>;
  /**
   * Makes a linked login's token usable for a call (refreshed when about to expire): false when the link is gone
   * (the provider answered `invalid_grant`, or the tokens are missing), true otherwise, also when the provider
   * could not be reached (the call's own credentials then report that).
   */
  ensureUsable(person: string, login: string): Promise<boolean>;
  connectUrl(claims: Omit<ConnectTicketClaims, 'expiresAt' | 'nonce'>): string;
}

export function createPersonLoginGate(options: PersonLoginGateOptions): PersonActionGate {
  const { loaded, settings } = options;
  // Per tool object (a snapshot's tools never change): its alternatives, or null when none uses a per-person login.
  const alternativesOf = new WeakMap<IndexedTool, LoginAlternative[] | null>();

  /** The tool's login alternatives: an OpenAPI operation's security, or an MCP source's one login. */
  function configured(tool: IndexedTool): LoginAlternative[] {
    const source = loaded.config.sources[tool.sourceName];
    if (tool.kind === 'mcp') return source?.kind === 'mcp' ? mcpLoginAlternatives(tool.sourceName, source.credentials) : [];
    return source?.kind === 'openapi' ? loginAlternativesOf(tool.sourceName, tool.operation.security, source.credentials ?? {}) : [];
  }

  function alternatives(tool: IndexedTool): LoginAlternative[] | null {
    let known = alternativesOf.get(tool);
    if (known === undefined) {
      const found = configured(tool);
      known = found.some((alternative) => alternative.logins.some((login) => settings.has(login))) ? found : null;
      alternativesOf.set(tool, known);
    }
    return known;
  }

  function connectAction(caller: McpCaller, tool: IndexedTool, login: string, label: string): PendingPersonAction {
    return {
      reason: 'PERSON_ACTION_REQUIRED',
      message: `calling ${tool.name} needs your ${label} account: open the link to connect it, then call again`,
      url: options.connectUrl({ person: caller.subject, login, session: caller.sessionId }),
    };
  }

  return {
    // A tool no per-person login can serve is never asked about: its calls stay on the plain path.
    appliesTo: (tool) => alternatives(tool) !== null,
    pendingAction(caller, tool): PendingPersonAction | undefined | Promise<PendingPersonAction | undefined> {
      const found = alternatives(tool);
      if (!found) return undefined;
      // The same choice the executor's credentials make; a login outside the session is the core rules' refusal.
      const choice = chooseLoginAlternative(found, caller.logins);
      if (!choice.chosen) return undefined;
      const wanted: Array<{ login: string; label: string; isCached: boolean }> = [];
      for (const login of choice.chosen.logins) {
        const person = settings.get(login);
        if (person) wanted.push({ login, label: person.label, isCached: options.isLinked(caller.subject, login) });
      }
      if (wanted.length === 0) return undefined;
      return (async () => {
        for (const { login, label, isCached } of wanted) {
          // Not in this process's cache: another process (`--workers`, a replica) may have linked it just now, so
          // the store is asked before the person is (a person is never sent to link an account they have linked).
          if (!isCached && !(await options.findLinked(caller.subject, login))) return connectAction(caller, tool, login, label);
          if (!(await options.ensureUsable(caller.subject, login))) return connectAction(caller, tool, login, label);
        }
        return undefined;
      })();
    },
  };
}
