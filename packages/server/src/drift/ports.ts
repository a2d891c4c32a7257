import type { DriftStatus, McpTool, Operation } from '@gateway/core';

export type { DriftStatus } from '@gateway/core';

/**
 * The drift area's storage port: what the watcher, the followers and the MCP monitor keep, as an awaitable interface
 * named for the domain. Adapters: ./sqlite/ and ./postgres/; ./contract/ holds the suite both pass.
 */

/** The persisted state of one source's drift checks. */
export interface DriftState {
  source: string;
  document: string;
  etag: string | null;
  lastModified: string | null;
  documentDigest: string | null;
  checkedAt: string | null;
  status: DriftStatus;
  error: { code: string; message: string } | null;
  publicationId: string | null;
  blocked: Array<{ tool: string; reason: string }>;
}

/** A proposed publication recorded from a live description (one per source and distinct digest). */
export interface DriftProposal {
  source: string;
  digest: string;
  publicationId: string | null;
  detectedAt: string;
  lastSeenAt: string;
  added: string[];
  changed: string[];
  removed: string[];
  /** `publication-<n>`: the number `gateway import` gives this proposal in the lock served (null for rows from before it was recorded). */
  proposalId: string | null;
  /** Tools the proposal selects (carried forward as import does). */
  toolCount: number | null;
  /** The change versus the publication in use, one sentence per operation. */
  summary: string[];
}

/** What recording a proposal takes: the sighting; `lastSeenAt` is the store's. */
export type NewDriftProposal = Omit<DriftProposal, 'lastSeenAt'>;

export interface DriftStore {
  /** Replaces the recorded state of `state.source`. */
  saveState(state: DriftState): Promise<void>;
  loadState(source: string): Promise<DriftState | undefined>;
  /**
   * Records a proposal with its normalised operations the first time its digest is seen for its source; a later
   * sighting keeps `detectedAt` and the operations, and refreshes `lastSeenAt` and the rest (a reload of the lock may
   * have moved its number). One atomic step; answers the proposal as recorded.
   */
  recordProposal(proposal: NewDriftProposal, operations: readonly Operation[] | readonly McpTool[]): Promise<DriftProposal>;
  proposal(source: string, digest: string): Promise<DriftProposal | undefined>;
  /** The normalised operations (or MCP tools) of a recorded proposal. */
  proposalOperations(source: string, digest: string): Promise<Operation[] | McpTool[] | undefined>;
}
