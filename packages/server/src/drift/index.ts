/** Drift: the live descriptions compared with the publications in use (docs/drift.md). */
export { driftMigrations } from './migrations.js';
export { compareWithPublication, shortFingerprint, type DriftComparison } from './compare.js';
export { DriftStore, type DriftProposal, type DriftState, type DriftStatus } from './store.js';
export {
  startDriftWatcher,
  type DriftLogger,
  type DriftRegistry,
  type DriftSourceReport,
  type DriftWatcher,
  type DriftWatcherOptions,
} from './watcher.js';
export { followDrift, DRIFT_FOLLOW_INTERVAL_MS } from './follower.js';
