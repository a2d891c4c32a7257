/**
 * The approvals area's storage port: one-call approvals (docs/approvals.md). A call of an `each-call` tool asks
 * for an approval bound to the session, the tool, its fingerprint and a keyed digest of the arguments; a person
 * decides it; the call's retry uses it once. What must be atomic is one method here (deciding only a waiting,
 * unexpired approval; using an approved one once), so an adapter runs it as one statement or transaction. The
 * SQLite adapter is ./sqlite/; ./contract/ holds the suite every adapter passes.
 */

/** `waiting` for a person; `approved` or `denied` by one; `used` by the call it approved; `expired` unanswered. */
export type ApprovalStatus = 'waiting' | 'approved' | 'denied' | 'used' | 'expired';

/** Where an approval stands at `now`: a waiting or approved (unused) one past its expiry reads as `expired`. */
export function approvalStatusAt(stored: ApprovalStatus, expiresAt: number, now: number): ApprovalStatus {
  return (stored === 'waiting' || stored === 'approved') && expiresAt <= now ? 'expired' : stored;
}

/** What an approval is bound to: this session, this tool as published, these arguments. */
export interface ApprovalBinding {
  sessionId: string;
  tool: string;
  fingerprint: string;
  /** The receipt log's keyed digest of the canonical arguments (never the arguments themselves). */
  argumentsDigest: string;
}

export interface NewApproval extends ApprovalBinding {
  /** The session's person (subject) and name, and its client: shown on the approval page. */
  subject: string;
  personName: string;
  clientId: string;
  clientName: string;
  source: string;
  /** What the tool calls (`POST /orders`, `MCP refund`), shown on the page. */
  target: string;
  /** The arguments as the approver reads them: redacted (no secret), bounded; JSON text. */
  argumentsPreview: string;
  /** Who may decide: person names and `@operators`; null: the session's own person. */
  approvers: string[] | null;
  /** Epoch ms. */
  expiresAt: number;
}

export interface ApprovalRecord extends NewApproval {
  /** `approval-<random>`: unguessable, it is part of the approval page's URL. */
  id: string;
  status: ApprovalStatus;
  createdAt: number;
  decidedAt: number | null;
  /** The approver's name (who approved or denied). */
  decidedBy: string | null;
  usedAt: number | null;
}

export interface ApprovalFilter {
  /** Only approvals in one of these states at `now` (`expired` derived from the expiry, as `find` reads it). */
  statuses?: readonly ApprovalStatus[];
  sessionId?: string;
  limit: number;
  /** Skips this many of the matching approvals, newest first (a page after the first). */
  offset?: number;
}

export interface Approvals {
  /**
   * The approval of this very call: the newest one with this binding that is waiting, approved or denied and not
   * past its expiry (an expired waiting one reads as `expired`); undefined when there is none, or only used ones.
   */
  findFor(binding: ApprovalBinding, now?: number): Promise<ApprovalRecord | undefined>;
  /**
   * Asks for an approval: returns the open one of this binding when there is one (a client retrying before the
   * person answered gets the same page), else creates it waiting.
   */
  request(input: NewApproval, now?: number): Promise<ApprovalRecord>;
  find(id: string, now?: number): Promise<ApprovalRecord | undefined>;
  /**
   * Approves or denies a waiting, unexpired approval, recording who; 'not-waiting' (nothing written) when it was
   * decided, used or expired already, undefined when unknown. One atomic step: two approvers racing decide once.
   */
  decide(id: string, decision: 'approved' | 'denied', by: string, now?: number): Promise<ApprovalRecord | 'not-waiting' | undefined>;
  /** Uses an approved, unexpired approval for its call: true once; false for any later use or another state. */
  use(id: string, now?: number): Promise<boolean>;
  /**
   * Marks every waiting or approved (unused) approval past its expiry `expired` and returns those it marked: one
   * atomic step, so each expiry is returned once, whichever process asks (and is receipted once: ./receipting.ts).
   */
  expire(now?: number): Promise<ApprovalRecord[]>;
  /**
   * Newest first (creation time, then insertion order), filtered and paged in the store: at most `limit`, after
   * `offset`. Waiting or approved ones past expiry are listed, and filtered, as `expired`.
   */
  list(filter: ApprovalFilter, now?: number): Promise<ApprovalRecord[]>;
}
