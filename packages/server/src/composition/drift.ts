/**
 * Drift: each live description re-read and changed operations blocked (docs/drift.md). Of the processes sharing
 * the database, the holder of the `drift-leader` lease checks; the others apply what it records. MCP sources are
 * re-listed on their upstream's list_changed and periodically (docs/sources-mcp.md).
 */
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { DriftSourceReport, LoadedConfig } from '@gateway/core';
import { startDrift, type DriftWatcher } from '../drift/index.js';
import { startMcpDriftMonitor } from '../drift/mcp-monitor.js';
import type { PublicationRegistry } from '../publications/registry.js';
import type { CallArea } from './calls.js';
import type { Closers } from './closers.js';
import type { GatewayStorage } from './storage.js';

/**
 * Time between drift rounds. Conditional requests (ETag / If-Modified-Since) make an unchanged URL document a
 * 304 without a body, and an unchanged file is not normalised again, so polling every minute is cheap; the
 * push trigger (`gateway drift check`) closes the window entirely for owners who deploy the API.
 */
export const DEFAULT_DRIFT_INTERVAL_SECONDS = 60;

/** What the admin API shows and re-checks on push (`gateway drift check`): OpenAPI and MCP sources alike. */
export interface DriftReports {
  report(): DriftSourceReport[];
  checkNow(sources?: readonly string[]): Promise<void>;
}

export async function startDriftChecks(
  context: {
    loaded: LoadedConfig;
    storage: GatewayStorage;
    registry: PublicationRegistry;
    agent: Dispatcher;
    logger: Logger;
    calls: Pick<CallArea, 'mcpUpstreams' | 'onToolListChanged'>;
  },
  closers: Closers,
): Promise<{ drift: DriftWatcher | undefined; reports: DriftReports | undefined }> {
  const { loaded, registry, logger } = context;
  const config = loaded.config;
  const intervalMs = Math.round((config.drift?.intervalSeconds ?? DEFAULT_DRIFT_INTERVAL_SECONDS) * 1000);
  const store = context.storage.driftStore();
  let drift: DriftWatcher | undefined;
  if (config.drift?.enabled !== false) {
    const started = await startDrift({
      loaded,
      store,
      leases: context.storage.leases(),
      changes: context.storage.changeFeed(),
      registry,
      agent: context.agent,
      logger,
      intervalMs,
    });
    drift = started;
    closers.add(() => started.stop());
  }
  const pool = context.calls.mcpUpstreams;
  const mcpDrift = pool ? startMcpDriftMonitor({ loaded, store, registry, pool, logger, intervalMs }) : undefined;
  if (mcpDrift) {
    context.calls.onToolListChanged((sourceName) => void mcpDrift.check(sourceName));
    closers.add(() => mcpDrift.stop());
  }
  if (!drift && !mcpDrift) return { drift, reports: undefined };
  const reports: DriftReports = {
    report: () => [...(drift?.report() ?? []), ...(mcpDrift?.report() ?? [])],
    checkNow: async (sources) => {
      await drift?.checkNow(sources);
      const mcpSources = sources ?? Object.keys(config.sources).filter((name) => config.sources[name]!.kind === 'mcp');
      for (const name of mcpSources) await mcpDrift?.check(name);
    },
  };
  return { drift, reports };
}
