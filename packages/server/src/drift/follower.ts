import { sourceLocation, type LoadedConfig } from '@gateway/core';
import type { SqliteDatabase } from '../store/sqlite/database.js';
import { DriftStore, reportOf } from './store.js';
import type { DriftRegistry, DriftSourceReport, DriftWatcher } from './watcher.js';

/** How often a follower re-reads the drift state the checking worker records. */
export const DRIFT_FOLLOW_INTERVAL_MS = 1_000;

/**
 * Drift for a worker that does not check descriptions itself (`gateway serve --workers N`: only worker 1
 * fetches them, so an upstream sees one reader and one proposal is recorded, not N). It applies the blocks
 * the checking worker recorded in the shared database, read once a second (a few primary-key reads), under
 * the same rule a restart uses: only while the publication in use is the one they were computed against.
 * So a drifted tool is refused by every worker within about a second of the check that found it.
 */
export function followDrift(options: {
  loaded: LoadedConfig;
  database: SqliteDatabase;
  registry: DriftRegistry;
  intervalMs?: number;
}): DriftWatcher {
  const { loaded, registry } = options;
  const store = new DriftStore(options.database);
  const sourceNames = Object.keys(loaded.config.sources).sort();
  const applied = new Map<string, string>();

  function apply(): void {
    const publications = registry.snapshot().publications;
    for (const source of sourceNames) {
      const state = store.loadState(source);
      const isCurrent =
        state !== undefined &&
        state.document === sourceLocation(loaded.config.sources[source]!) &&
        state.publicationId === (publications.get(source) ?? null);
      const blocked = isCurrent ? state.blocked : [];
      const key = JSON.stringify([publications.get(source) ?? null, blocked]);
      if (applied.get(source) === key) continue;
      applied.set(source, key);
      registry.setBlocked(source, new Map(blocked.map((entry) => [entry.tool, entry.reason])));
    }
  }

  apply();
  const timer = setInterval(() => {
    try {
      apply();
    } catch {
      // A busy or briefly unreadable database: keep the last blocks, try again next tick.
    }
  }, options.intervalMs ?? DRIFT_FOLLOW_INTERVAL_MS);
  timer.unref();

  return {
    async checkNow() {
      apply();
    },
    async stop() {
      clearInterval(timer);
    },
    report(): DriftSourceReport[] {
      return sourceNames.map((source) => {
        const state = store.loadState(source);
        const document = sourceLocation(loaded.config.sources[source]!);
        if (!state) return { source, document, checkedAt: null, status: 'pending', publication: null, blockedTools: [] };
        const proposal = state.documentDigest && state.status === 'drifted' ? store.proposal(source, state.documentDigest) : undefined;
        return reportOf(state, proposal);
      });
    },
  };
}
