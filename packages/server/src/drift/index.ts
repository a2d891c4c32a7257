/** Drift: the live descriptions compared with the publications in use (docs/drift.md). */
export { compareWithPublication, shortFingerprint, type DriftComparison } from './compare.js';
export type { DriftProposal, DriftState, DriftStatus, DriftStore, NewDriftProposal } from './ports.js';
export { reportOf, proposalReportOf } from './report.js';
export {
  startDriftWatcher,
  type DriftLogger,
  type DriftRegistry,
  type DriftSourceReport,
  type DriftWatcher,
  type DriftWatcherOptions,
} from './watcher.js';
export { followDrift, DRIFT_FOLLOW_INTERVAL_MS } from './follower.js';
export {
  startDrift,
  DRIFT_LEADER_LEASE,
  DRIFT_LEASE_MS,
  type DriftLeadership,
  type DriftLeadershipOptions,
} from './leader.js';
