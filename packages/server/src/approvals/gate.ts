/**
 * The approvals gate (docs/approvals.md › At call time): a call of a tool reviewed `approval: each-call` finds the
 * approval of this very call (session, tool, fingerprint, keyed arguments digest). None yet, or only an expired
 * one: it asks for one and the call answers "a person must act first" with the approval page; still waiting: the
 * same answer; denied: the decision refuses (CALL_APPROVAL_DENIED); approved: the call may run, and uses the
 * approval once right before it does (calls/pipeline.ts).
 */
import { NO_SECRETS, redactJsonValue, type SecretForms } from '@gateway/runtime';
import type { McpCaller } from '../calls/caller.js';
import type { GateFinding, PersonActionGate } from '../calls/pipeline.js';
import type { IndexedTool } from '../publications/registry.js';
import type { Approvals } from './ports.js';

/** Default time a person has to answer, and an approved call to run (seconds). */
export const DEFAULT_APPROVAL_EXPIRY_SECONDS = 600;
/** The arguments preview is bounded: the page shows this many characters at most. */
export const ARGUMENTS_PREVIEW_MAX_CHARS = 4_000;

export interface ApprovalsGateOptions {
  approvals: Approvals;
  /** `gateway.url` (the page is `{gatewayUrl}/approvals/<id>`). */
  gatewayUrl: string;
  expirySeconds?: number;
  /** The session's person and client names, for the page (the session store's record). */
  describeSession?(sessionId: string): Promise<{ personName: string; clientName: string } | undefined>;
  /** Secrets the preview must never show (the configured credentials); none by default. */
  secrets?(): SecretForms;
}

/** What the tool calls, in words: `POST /orders/{id}/refund`, or `MCP refund` for an MCP source's tool. */
export function targetOf(tool: IndexedTool): string {
  if (tool.kind === 'mcp') return `MCP ${tool.entry.tool}`;
  return `${tool.operation.method.toUpperCase()} ${tool.operation.path}`;
}

/** The arguments as the approver reads them: secrets redacted, pretty JSON, bounded. */
export function argumentsPreview(argumentsValue: unknown, secrets: SecretForms): string {
  const text = JSON.stringify(redactJsonValue(argumentsValue ?? {}, secrets), null, 2) ?? '{}';
  return text.length <= ARGUMENTS_PREVIEW_MAX_CHARS
    ? text
    : `${text.slice(0, ARGUMENTS_PREVIEW_MAX_CHARS)}\n… (cut: ${text.length} characters)`;
}

/**
 * The same words whether the approval was just asked for or was waiting already: one call may be decided twice
 * (the /mcp re-approval check, then the call itself), and the second finds the approval the first asked for.
 */
function waitingMessage(tool: string): string {
  return `waiting for a person to approve this call of ${tool}: open the approval page, then call it again`;
}

export function createApprovalsGate(options: ApprovalsGateOptions): PersonActionGate {
  const { approvals } = options;
  const base = options.gatewayUrl.replace(/\/+$/, '');
  const expiryMs = (options.expirySeconds ?? DEFAULT_APPROVAL_EXPIRY_SECONDS) * 1000;
  const pageUrl = (id: string) => `${base}/approvals/${encodeURIComponent(id)}`;

  return {
    appliesTo: (tool) => tool.entry.approval === 'each-call',
    async pendingAction(
      caller: McpCaller,
      tool: IndexedTool,
      argumentsValue: unknown,
      argumentsDigest: string,
    ): Promise<GateFinding | undefined> {
      if (tool.entry.approval !== 'each-call') return undefined;
      const name = tool.listed.name;
      const binding = { sessionId: caller.sessionId, tool: name, fingerprint: tool.entry.fingerprint, argumentsDigest };
      const now = Date.now();
      const found = await approvals.findFor(binding, now);
      if (found?.status === 'approved') {
        return { callApproval: 'approved', approvalId: found.id, use: () => approvals.use(found.id) };
      }
      if (found?.status === 'denied') return { callApproval: 'denied', approvalId: found.id, use: async () => false };
      if (found?.status === 'waiting') {
        return {
          reason: 'PERSON_ACTION_REQUIRED',
          message: waitingMessage(name),
          url: pageUrl(found.id),
        };
      }
      // Found expired: marked (and, with receipts on, receipted) once, before another is asked for.
      if (found?.status === 'expired') await approvals.expire(now);
      const described = await options.describeSession?.(caller.sessionId);
      const requested = await approvals.request(
        {
          ...binding,
          subject: caller.subject,
          personName: described?.personName ?? caller.subject,
          clientId: caller.clientId,
          clientName: described?.clientName ?? caller.clientId,
          source: tool.sourceName,
          target: targetOf(tool),
          argumentsPreview: argumentsPreview(argumentsValue, options.secrets?.() ?? NO_SECRETS),
          approvers: tool.entry.approvers ? [...tool.entry.approvers] : null,
          expiresAt: now + expiryMs,
        },
        now,
      );
      return {
        reason: 'PERSON_ACTION_REQUIRED',
        message: waitingMessage(name),
        url: pageUrl(requested.id),
      };
    },
  };
}
