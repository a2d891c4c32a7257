/**
 * The rug-pull defence for MCP sources (docs/sources-mcp.md): an upstream MCP server can change a tool's
 * description or schema at any time, and the model would read the new words under the approval given to the
 * old ones. So on every `notifications/tools/list_changed` from an upstream, and on a periodic re-list while
 * the upstream is connected, its tools are normalised again and compared by fingerprint with the publication
 * in use: a tool whose fingerprint changed, or that vanished, is blocked at once (refused on call, hidden
 * from lists); unchanged tools keep working; the difference is recorded as a proposal for `gateway status`.
 * Upstream tools are matched by their upstream name, so the gateway's collision prefix does not matter here.
 */
import { normaliseMcpTools, otherSourcesToolNames, type LoadedConfig } from '@gateway/core';
import type { McpUpstreamPool } from '../execute/mcp-upstream.js';
import type { PublicationRegistry } from '../publications/registry.js';
import type { DriftStore } from './ports.js';
import { compareMcpTools } from './mcp-compare.js';
import { describeProposal } from './proposal.js';
import { proposalReportOf } from './report.js';
import type { DriftSourceReport } from './types.js';

export interface McpDriftMonitorOptions {
  loaded: LoadedConfig;
  store: DriftStore;
  registry: PublicationRegistry;
  pool: McpUpstreamPool;
  logger: { info(object: object, message: string): void; warn(object: object, message: string): void };
  /** Default re-list period (a source's relistIntervalSeconds overrides it). */
  intervalMs: number;
}

export interface McpDriftMonitor {
  /** Re-lists one source now and applies the outcome (calls for one source run one after another). */
  check(sourceName: string): Promise<void>;
  report(): DriftSourceReport[];
  stop(): void;
}

export function startMcpDriftMonitor(options: McpDriftMonitorOptions): McpDriftMonitor {
  const { loaded, registry, pool, logger } = options;
  const { store } = options;
  const sources = Object.entries(loaded.config.sources).flatMap(([name, source]) =>
    source.kind === 'mcp' ? [[name, source] as const] : [],
  );
  const reports = new Map<string, DriftSourceReport>();
  const running = new Map<string, Promise<void>>();
  for (const [name, source] of sources) {
    reports.set(name, {
      source: name,
      document: source.url ?? `stdio:${JSON.stringify(source.command ?? [])}`,
      checkedAt: null,
      status: 'pending',
      publication: registry.snapshot().publications.get(name) ?? null,
      blockedTools: [],
    });
  }

  async function evaluate(sourceName: string): Promise<void> {
    const report = reports.get(sourceName)!;
    let live: ReturnType<typeof normaliseMcpTools>;
    try {
      const listed = await pool.listTools(sourceName);
      // Named as `gateway import` names them (the prefix rule), so the proposal recorded is the one import writes.
      const lock = registry.snapshot().lock;
      live = normaliseMcpTools(sourceName, listed, lock ? otherSourcesToolNames(lock, sourceName) : new Set());
    } catch (error) {
      report.status = 'error';
      report.error = { code: (error as { code?: string }).code ?? 'MCP_UPSTREAM_FAILED', message: (error as Error).message };
      report.checkedAt = new Date().toISOString();
      logger.warn({ source: sourceName, error: report.error }, 'mcp drift check failed; nothing changed');
      return;
    }
    const snapshot = registry.snapshot();
    const publicationId = snapshot.publications.get(sourceName) ?? null;
    const { blocked, changed, removed, added } = compareMcpTools(snapshot, sourceName, live, publicationId);
    // Blocking first: from here on a changed tool is refused, whatever else happens.
    registry.setBlocked(sourceName, blocked);
    const detectedAt = new Date().toISOString();
    if (publicationId && changed.length + removed.length + added.length > 0) {
      const location = report.document;
      const proposal = await store.recordProposal(
        {
          source: sourceName,
          digest: live.documentDigest,
          publicationId,
          detectedAt,
          added,
          changed,
          removed,
          ...describeProposal(snapshot.lock, sourceName, location, { kind: 'mcp', ...live }),
        },
        live.operations,
      );
      report.proposal = proposalReportOf(proposal);
      logger.warn({ source: sourceName, blocked: [...blocked.keys()] }, 'mcp drift: tools blocked');
    } else {
      delete report.proposal;
    }
    report.status = !publicationId ? 'not-published' : report.proposal ? 'drifted' : 'in-sync';
    report.publication = publicationId;
    report.blockedTools = [...blocked].map(([tool, reason]) => ({ tool, reason }));
    report.checkedAt = detectedAt;
    delete report.error;
  }

  function check(sourceName: string): Promise<void> {
    if (!reports.has(sourceName)) return Promise.resolve();
    const previous = running.get(sourceName) ?? Promise.resolve();
    const next = previous.then(() => evaluate(sourceName)).catch(() => undefined);
    running.set(sourceName, next);
    return next;
  }

  // Periodic re-list, only while an upstream is connected: a source nobody has called yet is not started
  // just to be watched (the first call lists it anyway, and its server reports its own changes while up).
  const timers = sources.map(([name, source]) => {
    const period = source.relistIntervalSeconds !== undefined ? source.relistIntervalSeconds * 1000 : options.intervalMs;
    const timer = setInterval(() => {
      if (pool.isConnected(name)) void check(name);
    }, period);
    timer.unref();
    return timer;
  });

  // A new publication (re-imported, reviewed, published) is compared again at once, so its tools are served
  // (or stay blocked) according to the upstream as it is now, not to the old publication's comparison.
  const unsubscribe = registry.onChange((change) => {
    if (change.kind !== 'snapshot') return;
    for (const [name] of sources) if (pool.isConnected(name) || registry.blockedTools().has(name)) void check(name);
  });

  return {
    check,
    report: () => [...reports.values()].map((report) => structuredClone(report)),
    stop() {
      unsubscribe();
      for (const timer of timers) clearInterval(timer);
    },
  };
}
