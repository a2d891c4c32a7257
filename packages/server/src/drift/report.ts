import type { DriftSourceReport } from '@gateway/core';
import type { DriftProposal, DriftState } from './ports.js';

/** One source's recorded state (and the proposal it shows) as `GET /admin/status` reports it. */
export function reportOf(state: DriftState, proposal: DriftProposal | undefined): DriftSourceReport {
  return {
    source: state.source,
    document: state.document,
    checkedAt: state.checkedAt,
    status: state.status,
    ...(state.error ? { error: state.error } : {}),
    publication: state.publicationId,
    blockedTools: state.blocked,
    ...(proposal ? { proposal: proposalReportOf(proposal) } : {}),
  };
}

/** A recorded proposal as the admin API shows it. */
export function proposalReportOf(proposal: DriftProposal): NonNullable<DriftSourceReport['proposal']> {
  return {
    ...(proposal.proposalId ? { id: proposal.proposalId } : {}),
    digest: proposal.digest,
    detectedAt: proposal.detectedAt,
    changed: proposal.changed,
    removed: proposal.removed,
    added: proposal.added,
    summary: proposal.summary,
    ...(proposal.toolCount === null ? {} : { toolCount: proposal.toolCount }),
  };
}
