/**
 * The decision step of the call pipeline (./pipeline.ts): resolve the tool in the caller's snapshot, gather the
 * facts (session, fingerprints, logins, a retry's `requestState`, what the person-action gates found) and let
 * core `decideCall` decide. No side effects besides what a gate does to ask a person (an approval request).
 */
import {
  decideCall,
  loginAlternativesOf,
  mcpLoginAlternatives,
  type CallFacts,
  type CallVerdict,
  type LoadedConfig,
  type LoginAlternative,
} from '@gateway/core';
import type { RequestStates } from './request-states.js';
import type { McpAuthorizer, McpCaller } from './caller.js';
import type { IndexedTool, PublicationRegistry } from '../publications/registry.js';
import type { CallDecision, PersonActionGate } from './pipeline-types.js';

export interface DeciderOptions {
  registry: PublicationRegistry;
  authorizer: McpAuthorizer;
  loaded: LoadedConfig | undefined;
  requestStates: RequestStates;
  gates: readonly PersonActionGate[];
  argumentsDigestOf(argumentsValue: unknown): string;
}

const ALLOW: CallVerdict = Object.freeze({ kind: 'allow' });

/** What the decision reads of one tool object of a snapshot, the same for every call of it. */
interface PerTool {
  facts: NonNullable<CallFacts['tool']>;
  loginAlternatives: LoginAlternative[] | undefined;
  gates: readonly PersonActionGate[];
}
const NO_GATES: readonly PersonActionGate[] = [];

/** Whether the gates may change the verdict: the core rules allow the call, or refuse it only for want of an approval. */
function gatesMatter(verdict: CallVerdict): boolean {
  return verdict.kind === 'allow' || (verdict.kind === 'deny' && verdict.reason === 'CALL_APPROVAL_UNAVAILABLE');
}

export function createDecider(options: DeciderOptions) {
  const { registry, authorizer, loaded, requestStates, gates, argumentsDigestOf } = options;
  // Per tool object (a snapshot's tools never change): what the decision reads of it, found once.
  const perToolCache = new WeakMap<IndexedTool, PerTool>();
  const NO_LOGINS: LoginAlternative[] = [{ schemes: [], logins: [] }];

  function perTool(tool: IndexedTool): PerTool {
    let found = perToolCache.get(tool);
    if (!found) {
      const { fingerprint, tool: operationName, approval } = tool.entry;
      const applying = gates.filter((gate) => !gate.appliesTo || gate.appliesTo(tool));
      found = {
        facts: approval ? { fingerprint, operationName, approval } : { fingerprint, operationName },
        loginAlternatives: loginAlternatives(tool),
        // `appliesTo` reads only the tool, which never changes.
        gates: applying.length === 0 ? NO_GATES : applying,
      };
      perToolCache.set(tool, found);
    }
    return found;
  }

  /** The configured security alternatives of the tool's operation and their logins. */
  function loginAlternatives(tool: IndexedTool): LoginAlternative[] | undefined {
    if (!loaded) return undefined;
    const source = loaded.config.sources[tool.sourceName];
    // An MCP source has one credential: the gateway's own (no login a session picks), or its per-person login
    // `<source>/mcp` (docs/credentials.md), which the session must have been granted.
    if (tool.kind === 'mcp') {
      return source?.kind === 'mcp' && source.credentials?.type === 'oauthPerson'
        ? mcpLoginAlternatives(tool.sourceName, source.credentials)
        : NO_LOGINS;
    }
    const credentials = source?.kind === 'openapi' ? (source.credentials ?? {}) : {};
    return loginAlternativesOf(tool.sourceName, tool.operation.security, credentials);
  }

  /** Asks the gates in order; the first that finds something decides what the facts say. */
  async function askGates(
    asked: readonly PersonActionGate[],
    facts: CallFacts,
    decision: CallDecision,
    caller: McpCaller,
    tool: IndexedTool,
    argumentsObject: unknown,
  ): Promise<void> {
    for (const gate of asked) {
      const found = await gate.pendingAction(caller, tool, argumentsObject, decision.argumentsDigest!);
      if (!found) continue;
      if ('callApproval' in found) {
        facts.callApproval = found.callApproval;
        if (found.callApproval === 'approved') decision.approval = { id: found.approvalId, use: found.use };
      } else {
        facts.pendingAction = found;
      }
      return;
    }
  }

  /**
   * The decision, at once when neither a retry's state nor a gate is involved (the plain call: no promise, no
   * argument digest on the answer's path); otherwise a promise, as a gate may look something up.
   */
  function decide(caller: McpCaller, name: string, argumentsValue?: unknown, requestState?: string): CallDecision | Promise<CallDecision> {
    const receivedAt = Date.now();
    const startedMark = performance.now();
    const tool = registry.snapshot().tools.get(name);
    const facts: CallFacts = {
      toolName: name,
      session: { id: caller.sessionId, state: authorizer.sessionState(caller.sessionId), expiresAt: caller.expiresAt },
      now: receivedAt,
      grantedLogins: caller.logins,
    };
    const known = tool ? perTool(tool) : undefined;
    if (tool && known) {
      facts.tool = known.facts;
      facts.approvedFingerprint = caller.tools.get(name);
      facts.driftReason = registry.blockedReason(tool.sourceName, name);
      facts.loginAlternatives = known.loginAlternatives;
    }
    const decision: CallDecision = { name, tool, verdict: ALLOW, receivedAt, startedMark };
    // The arguments matter only to a retry's state and to the gates: the plain allowed call reads none of this.
    const asked = known ? known.gates : NO_GATES;
    if (!tool || (requestState === undefined && asked.length === 0)) return decided(decision, facts);
    const argumentsObject = argumentsValue ?? {};
    const argumentsDigest = argumentsDigestOf(argumentsObject);
    decision.argumentsDigest = argumentsDigest;
    if (requestState !== undefined) {
      const binding = {
        session: caller.sessionId,
        person: caller.subject,
        tool: name,
        fingerprint: tool.entry.fingerprint,
        argumentsDigest,
      };
      const check = requestStates.check(requestState, binding, receivedAt);
      if (check.ok) {
        facts.requestState = { ok: true };
        decision.requestStateClaims = check.claims;
      } else {
        facts.requestState = { ok: false, reason: check.reason, message: check.message };
      }
    }
    // The gates are asked only when they could change the answer: a refused call asks no person for anything.
    if (asked.length === 0 || !gatesMatter(decideCall(facts))) return decided(decision, facts);
    return askGates(asked, facts, decision, caller, tool, argumentsObject).then(() => decided(decision, facts));
  }

  function decided(decision: CallDecision, facts: CallFacts): CallDecision {
    decision.verdict = decideCall(facts);
    decision.decidedMark = performance.now();
    return decision;
  }

  return decide;
}
