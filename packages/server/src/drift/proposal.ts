import { describeDiffInWords, diffSource, draftProposal, findSource, type ImportedOperations, type Lockfile } from '@gateway/core';

/** What the drift store records of a proposal besides the lists of tools: the lock's number for it and its change in words. */
export interface ProposalDescription {
  proposalId: string | null;
  toolCount: number | null;
  summary: string[];
}

/**
 * The proposal a live description makes, as `gateway import` will write it into the lock the server serves (core
 * `draftProposal`, the same function import uses): its number, the tools it selects, and in words what changed
 * versus the publication in use (the sentences `gateway diff` prints). The server never writes tools.lock: git
 * stays the source of truth, and the import a person runs produces this same publication.
 */
export function describeProposal(
  lock: Lockfile | null,
  sourceName: string,
  documentLocation: string,
  imported: ImportedOperations,
): ProposalDescription {
  if (!lock) return { proposalId: null, toolCount: null, summary: [] };
  const draft = draftProposal(lock, sourceName, documentLocation, imported);
  const summary = describeDiffInWords(diffSource(sourceName, findSource(lock, sourceName), imported));
  return { proposalId: draft.id, toolCount: draft.toolCount, summary };
}
