/** The call pipeline's types (./pipeline.ts): its answers, decisions, options and the person-action gates. */
import type { CallTelemetry } from './call-telemetry.js';
import type {
  CallVerdict,
  LoadedConfig,
  PendingPersonAction,
  PersonAction,
  PersonActionReason,
  Receipt,
  RequestStateClaims,
} from '@gateway/core';
import type { FastifyBaseLogger } from 'fastify';
import type { CancelSignal } from '@gateway/runtime';
import type { RequestStates } from './request-states.js';
import type { Executor, ToolCallContext, ToolResult } from '../execute/executor.js';
import type { McpAuthorizer, McpCaller } from './caller.js';
import type { IndexedTool, PublicationRegistry } from '../publications/registry.js';
import type { ReceiptLog } from '../receipts/log.js';

/**
 * How a call is answered: a tool result (possibly `isError`), an invalid-params protocol error, or "a person
 * must act first" (the MCP layer encodes it per era: mcp/plugin.ts). A `visit` carries the `requestState` the
 * retry must bring back and the elicitation id (the state's nonce).
 */
export type CallAnswer =
  | { kind: 'result'; result: ToolResult }
  | { kind: 'invalid-params'; message: string }
  | {
      kind: 'act';
      reason: PersonActionReason;
      message: string;
      action: PersonAction;
      requestState?: string;
      elicitationId?: string;
    };

/**
 * A source of "a person must act first" besides the core rules: given the caller, the tool and the arguments,
 * what a person must still do (link an account for OAuth per person, approve this very call…). Asked only
 * when the core rules would otherwise allow the call.
 */
export interface PersonActionGate {
  /**
   * What the gate found, or a promise of it: a pending action (the call answers "a person must act first"), or a
   * person's decision about this very call (an `each-call` tool). `argumentsDigest`: the keyed digest of the
   * arguments (the receipt log's, or the requestStates' when receipts are off).
   */
  /**
   * Whether the gate has anything to say about calls of this tool (cheap, no I/O). Without it, every call is asked.
   * A call no gate applies to reads no arguments at decision time: its digest is made while the upstream works.
   */
  appliesTo?(tool: IndexedTool): boolean;
  pendingAction(
    caller: McpCaller,
    tool: IndexedTool,
    argumentsValue: unknown,
    argumentsDigest: string,
  ): GateFinding | undefined | Promise<GateFinding | undefined>;
}

/** A person's decision about this very call; `use` spends an approved one (true once) right before execution. */
export interface CallApprovalFinding {
  callApproval: 'approved' | 'denied';
  approvalId: string;
  use(): Promise<boolean>;
}

export type GateFinding = PendingPersonAction | CallApprovalFinding;

export interface CallDecision {
  name: string;
  tool: IndexedTool | undefined;
  verdict: CallVerdict;
  /** The retry's `requestState`, opened and checked (spent when the call goes on). */
  requestStateClaims?: RequestStateClaims;
  /** The keyed digest of the arguments, when the decision needed it (a `requestState` or a gate). */
  argumentsDigest?: string;
  /** The approval this call runs on (an `each-call` tool, approved): used once right before execution. */
  approval?: { id: string; use(): Promise<boolean> };
  /** When the call was received (epoch ms and a monotonic mark for the duration). */
  receivedAt: number;
  startedMark: number;
  /** When the verdict was reached (a monotonic mark, for the decision's span). */
  decidedMark?: number;
}

export interface CallPipeline {
  /**
   * Resolves and decides without side effects (the fast path asks first, then calls with the decision). The
   * arguments matter only to a retry's `requestState` and to the gates; without either they are not read, and
   * the decision comes at once, not as a promise (the plain call's path waits for nothing here).
   */
  decide(caller: McpCaller, name: string, argumentsValue?: unknown, requestState?: string): CallDecision | Promise<CallDecision>;
  /**
   * Runs the call to its answer and durable receipt; `receipt` resolves once that receipt is in the database
   * (undefined when it could not be written, which is logged). An executor failure (a bug, not an upstream
   * error) is receipted as `error` `INTERNAL_ERROR` and rethrown for the MCP layer to answer as the SDK would.
   */
  callTool(
    caller: McpCaller,
    name: string,
    argumentsValue: unknown,
    signal: CancelSignal | undefined,
    decision?: CallDecision,
    onProgress?: ToolCallContext['onProgress'],
    requestState?: string,
  ): Promise<{ answer: CallAnswer; receipt: Promise<Receipt | undefined> }>;
  /**
   * Receipts a decision that did not allow the call and that the MCP layer answers itself (the re-approval
   * challenge, a 401 for an ended session): it still ends in exactly one receipt (`denied`, or
   * `action-required`), durable when this returns; the promise is that receipt once it is in the database.
   */
  refuse(caller: McpCaller, decision: CallDecision, argumentsValue: unknown): Promise<Receipt | undefined>;
}

export interface CallPipelineOptions {
  registry: PublicationRegistry;
  authorizer: McpAuthorizer;
  executor: Executor;
  /** The config (login checks before execution); without it the executor's credential resolver refuses. */
  loaded?: LoadedConfig;
  /** Absent when `receipts.enabled: false`. */
  receipts: ReceiptLog | undefined;
  logger: FastifyBaseLogger;
  /** Seals and checks `requestState`s (default: a key of this process; the gateway passes the vault's). */
  requestStates?: RequestStates;
  /** Sources of "a person must act first" besides the core rules (the per-person logins' gate and the approvals
   * gate, approvals/gate.ts; tests add theirs). */
  gates?: readonly PersonActionGate[];
  /** Metrics and traces (telemetry/): told of every call at its receipt point. */
  telemetry?: CallTelemetry;
}
