import { findSource, inUsePublication, type Lockfile, type Publication } from '@gateway/core';
import { compareWithPublication, type DriftComparison } from './compare.js';
import type { LiveDocument } from './live-document.js';
import type { DriftState, DriftStatus, NewDriftProposal } from './ports.js';
import { describeProposal } from './proposal.js';
import type { DriftLogger, DriftRegistry } from './types.js';

/** What comparing a live description with the publication in use decided: the source's new state, and a proposal to record. */
export interface DriftVerdict {
  state: DriftState;
  /** Present when the live description differs from the publication (a proposal waits for a person). */
  proposal?: NewDriftProposal;
}

/** The in-use publication of the verified lock the registry serves (never re-read), when it is `publicationId`. */
function servedPublication(lock: Lockfile | null, source: string, publicationId: string): Publication | undefined {
  const lockSource = lock ? findSource(lock, source) : undefined;
  const publication = lockSource?.kind === 'openapi' ? inUsePublication(lockSource) : undefined;
  return publication?.id === publicationId ? publication : undefined;
}

/**
 * Compares the live document with the publication the registry serves and blocks the tools whose operation changed or
 * vanished. Synchronous on purpose: run from a snapshot swap, it sets the blocks before any request can use the new
 * snapshot; what it decided is recorded afterwards.
 */
export function judgeLiveDocument(input: {
  registry: DriftRegistry;
  source: string;
  /** The description's location as the lock names it (the proposal's). */
  location: string;
  live: LiveDocument;
  state: DriftState;
}): DriftVerdict {
  const { registry, source, live } = input;
  const snapshot = registry.snapshot();
  const publicationId = snapshot.publications.get(source) ?? null;
  let comparison: DriftComparison | undefined;
  if (publicationId) {
    const offered = [...snapshot.tools.values()].flatMap((tool) => (tool.sourceName === source && tool.operation ? [tool.operation] : []));
    const publication = servedPublication(snapshot.lock, source, publicationId);
    comparison = compareWithPublication(offered, live.operations, publication?.notOffered ?? []);
    // The very document it was published from: what it leaves out was left out on purpose, nothing is new.
    if (publication?.documentDigest === live.documentDigest) comparison.added = [];
  }
  const blocked = comparison ? [...comparison.blocked].map(([tool, reason]) => ({ tool, reason })) : [];
  registry.setBlocked(source, comparison?.blocked ?? new Map());
  // Tools added upstream are drift too (a proposal waits for a person), though nothing needs blocking.
  const hasDifference = comparison !== undefined && comparison.changed.length + comparison.removed.length + comparison.added.length > 0;
  const status: DriftStatus = !publicationId ? 'not-published' : hasDifference ? 'drifted' : 'in-sync';
  const state: DriftState = {
    ...input.state,
    etag: live.etag,
    lastModified: live.lastModified,
    documentDigest: live.documentDigest,
    status,
    error: null,
    publicationId,
    blocked,
  };
  if (!hasDifference) return { state };
  const proposal: NewDriftProposal = {
    source,
    digest: live.documentDigest,
    publicationId,
    detectedAt: new Date().toISOString(),
    added: comparison!.added,
    changed: comparison!.changed.map((change) => change.tool),
    removed: comparison!.removed,
    ...describeProposal(snapshot.lock, source, input.location, {
      kind: 'openapi',
      documentDigest: live.documentDigest,
      operations: live.operations,
    }),
  };
  return { state, proposal };
}

/** Logs a verdict that changes what is served: newly drifted (or drifted differently), or in sync again. */
export function logVerdict(logger: DriftLogger, previous: DriftState, verdict: DriftVerdict): void {
  const { state } = verdict;
  const isNewDrift = previous.status !== 'drifted' || JSON.stringify(state.blocked) !== JSON.stringify(previous.blocked);
  if (state.status === 'drifted' && isNewDrift) {
    logger.warn(
      {
        source: state.source,
        blocked: state.blocked.map((item) => item.tool),
        added: verdict.proposal?.added ?? [],
        digest: state.documentDigest,
      },
      state.blocked.length > 0 ? 'drift: tools blocked' : 'drift: the live description offers operations the publication does not',
    );
  } else if (state.status === 'in-sync' && previous.status === 'drifted') {
    logger.info({ source: state.source }, 'drift: description matches the publication again; tools unblocked');
  }
}
