import { DEFAULT_MAX_DOCUMENT_BYTES, findSource, inUsePublication, type LoadedConfig } from '@gateway/core';
import type { OpenApiSourceSettings } from './live-document.js';
import type { DriftState, DriftStore } from './ports.js';
import { reportOf } from './report.js';
import { createSourceChecks, type SourceMemory } from './source-checks.js';
import type { DriftRegistry, DriftWatcher, DriftWatcherOptions } from './types.js';

export type { DriftLogger, DriftRegistry, DriftSourceReport, DriftWatcher, DriftWatcherOptions } from './types.js';

/** The OpenAPI sources of the config, by name. MCP sources are re-listed by their upstream connection (mcp-monitor.ts). */
export function openApiSourcesOf(loaded: LoadedConfig): Map<string, OpenApiSourceSettings> {
  return new Map(
    Object.entries(loaded.config.sources).flatMap(([name, source]) => (source.kind === 'openapi' ? [[name, source] as const] : [])),
  );
}

function freshState(source: string, document: string): DriftState {
  return {
    source,
    document,
    etag: null,
    lastModified: null,
    documentDigest: null,
    checkedAt: null,
    status: 'pending',
    error: null,
    publicationId: null,
    blocked: [],
  };
}

/**
 * Each source's recorded state. A restart must not reopen drifted tools until the first check: the recorded blocks are
 * applied again while the publication in use is still the one they were computed against.
 */
async function restoreMemory(
  sources: ReadonlyMap<string, OpenApiSourceSettings>,
  store: DriftStore,
  registry: DriftRegistry,
): Promise<Map<string, SourceMemory>> {
  const memory = new Map<string, SourceMemory>();
  for (const source of [...sources.keys()].sort()) {
    const settings = sources.get(source)!;
    const saved = await store.loadState(source);
    const state = saved && saved.document === settings.document ? saved : freshState(source, settings.document);
    memory.set(source, { settings, state });
    if (state.blocked.length > 0 && state.publicationId === registry.snapshot().publications.get(source)) {
      registry.setBlocked(source, new Map(state.blocked.map((entry) => [entry.tool, entry.reason])));
    }
  }
  return memory;
}

/**
 * Re-reads each source's description on an interval and blocks the tools whose operation changed or vanished
 * (DESIGN.md, lifecycle step 7; source-checks.ts). Rounds run one after another; a new lock (hot reload) is judged at
 * once, in the swap itself, against the live descriptions `prepareFor` re-read just before it, so no verdict on a new
 * publication rests on a description read before it was made.
 */
export async function startDriftWatcher(options: DriftWatcherOptions): Promise<DriftWatcher> {
  const { loaded, registry, logger } = options;
  const memory = await restoreMemory(openApiSourcesOf(loaded), options.store, registry);
  const sourceNames = [...memory.keys()];
  const checks = createSourceChecks({
    memory,
    reading: {
      loaded,
      agent: options.agent,
      maxBytes: loaded.config.import?.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES,
      timeoutMs: loaded.config.import?.timeoutMs ?? 15_000,
    },
    store: options.store,
    ...(options.changes ? { changes: options.changes } : {}),
    registry,
    logger,
  });

  let round: Promise<void> = Promise.resolve();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  function runRound(only?: readonly string[]): Promise<void> {
    round = round
      .then(async () => {
        for (const source of only ?? sourceNames) {
          if (!memory.has(source)) continue;
          if (stopped || options.mayCheck?.() === false) return;
          await checks.check(source);
        }
      })
      .catch((error: unknown) => logger.error({ error: (error as Error)?.message }, 'drift round failed'));
    return round;
  }

  function scheduleNext(delayMs: number): void {
    if (stopped || options.schedule === false) return;
    timer = setTimeout(() => {
      void runRound().finally(() => scheduleNext(options.intervalMs));
    }, delayMs);
    timer.unref();
  }

  const unsubscribe = registry.onChange?.((change) => {
    if (change.kind !== 'snapshot' || stopped) return;
    for (const source of sourceNames) checks.rejudge(source);
  });
  scheduleNext(0);

  return {
    checkNow: (sources) => runRound(sources),
    prepareFor(lock) {
      // Re-read the description of every source whose publication in use the new lock changes (after any round
      // in progress, so the newest read is the one kept).
      if (stopped) return Promise.resolve();
      const served = registry.snapshot().publications;
      const changed = sourceNames.filter((source) => {
        const lockSource = findSource(lock, source);
        return (lockSource ? inUsePublication(lockSource)?.id : undefined) !== served.get(source);
      });
      return changed.length > 0 ? runRound(changed) : Promise.resolve();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      unsubscribe?.();
      await round.catch(() => undefined);
      await checks.settled();
    },
    report: () => sourceNames.map((source) => reportOf(memory.get(source)!.state, memory.get(source)!.proposal)),
  };
}
