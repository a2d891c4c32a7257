import type { LoadedConfig } from '@gateway/core';
import type { ChangeFeed } from '../store/changes.js';
import type { DriftStore } from './ports.js';
import { reportOf } from './report.js';
import type { DriftRegistry, DriftSourceReport, DriftWatcher } from './types.js';
import { openApiSourcesOf } from './watcher.js';

/** How often a follower re-reads the drift state the leader records. */
export const DRIFT_FOLLOW_INTERVAL_MS = 1_000;

/**
 * Drift for a process that does not check descriptions itself (it does not hold the `drift-leader` lease:
 * leader.ts), so an upstream sees one reader and one proposal is recorded, not one per process. It applies the
 * blocks the leader recorded in the shared store, read once a second (a few key reads), under the same rule a
 * restart uses: only while the publication in use is the one they were computed against. So a drifted tool is
 * refused by every process within about a second of the check that found it. With a change feed the leader's
 * `drift-blocks` announcement triggers the read at once (within the feed's bound), and the periodic read stays as
 * the safety net. Resolves once the recorded blocks are applied (rejects when the store cannot be read then).
 */
export async function followDrift(options: {
  loaded: LoadedConfig;
  store: DriftStore;
  registry: DriftRegistry;
  intervalMs?: number;
  changes?: ChangeFeed;
}): Promise<DriftWatcher> {
  const { registry, store } = options;
  const sources = openApiSourcesOf(options.loaded);
  const sourceNames = [...sources.keys()].sort();
  const applied = new Map<string, string>();
  let reports: DriftSourceReport[] = sourceNames.map((source) => ({
    source,
    document: sources.get(source)!.document,
    checkedAt: null,
    status: 'pending',
    publication: null,
    blockedTools: [],
  }));

  async function readReport(source: string): Promise<DriftSourceReport> {
    const document = sources.get(source)!.document;
    const state = await store.loadState(source);
    const publicationId = registry.snapshot().publications.get(source) ?? null;
    const isCurrent = state !== undefined && state.document === document && state.publicationId === publicationId;
    const blocked = isCurrent ? state.blocked : [];
    const key = JSON.stringify([publicationId, blocked]);
    if (applied.get(source) !== key) {
      applied.set(source, key);
      registry.setBlocked(source, new Map(blocked.map((entry) => [entry.tool, entry.reason])));
    }
    if (!state) return { source, document, checkedAt: null, status: 'pending', publication: null, blockedTools: [] };
    const proposal = state.documentDigest && state.status === 'drifted' ? await store.proposal(source, state.documentDigest) : undefined;
    return reportOf(state, proposal);
  }

  let applying: Promise<void> = Promise.resolve();
  let pending = 0;
  function apply(): Promise<void> {
    // One read after another, each starting after the one before ended: a `checkNow` sees what was recorded before it.
    pending += 1;
    applying = applying
      .catch(() => undefined)
      .then(async () => {
        const next: DriftSourceReport[] = [];
        for (const source of sourceNames) next.push(await readReport(source));
        reports = next;
      })
      .finally(() => {
        pending -= 1;
      });
    return applying;
  }

  await apply();
  const stopListening = options.changes?.subscribe('drift-blocks', ({ source }) => {
    if (sources.has(source)) apply().catch(() => undefined);
  });
  const timer = setInterval(() => {
    // A busy or briefly unreadable store: keep the last blocks, try again next tick (none piles up behind a slow one).
    if (pending === 0) apply().catch(() => undefined);
  }, options.intervalMs ?? DRIFT_FOLLOW_INTERVAL_MS);
  timer.unref();

  return {
    async checkNow() {
      await apply().catch(() => undefined);
    },
    async stop() {
      stopListening?.();
      clearInterval(timer);
      await applying.catch(() => undefined);
    },
    report: () => reports,
  };
}
