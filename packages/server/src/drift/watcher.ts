import { readFile, stat } from 'node:fs/promises';
import type { Dispatcher } from 'undici';
import {
  DEFAULT_MAX_DOCUMENT_BYTES,
  GatewayError,
  decodeDocumentBytes,
  findSource,
  importOpenApiText,
  inUsePublication,
  isGatewayError,
  resolveConfigPath,
  sha256Digest,
  type DriftSourceReport,
  type LoadedConfig,
  type LockedOperation,
  type Lockfile,
  type Operation,
  type Publication,
  sourceLocation,
} from '@gateway/core';
import { DOCUMENT_MAX_REDIRECTS, guardedDocumentFetcher, guardedFetchText } from '@gateway/runtime';
import type { SqliteDatabase } from '../store/sqlite/database.js';
import { compareWithPublication, type DriftComparison } from './compare.js';
import { describeProposal } from './proposal.js';
import { DriftStore, reportOf, type DriftState, type DriftStatus } from './store.js';

/** The part of the publication registry drift needs (publications/registry.ts). */
export interface DriftRegistry {
  snapshot(): {
    /** `operation` is absent for MCP tools: this watcher compares OpenAPI documents only. */
    readonly tools: ReadonlyMap<string, { sourceName: string; publicationId: string; operation?: LockedOperation }>;
    readonly publications: ReadonlyMap<string, string>;
    /** The verified lock in use (its unselected operations are not tools, yet drift must know them). */
    readonly lock: Lockfile | null;
  };
  setBlocked(sourceName: string, reasons: ReadonlyMap<string, string>): void;
  onChange?(listener: (change: { kind: string }) => void): () => void;
}

export interface DriftLogger {
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}

export interface DriftWatcherOptions {
  loaded: LoadedConfig;
  database: SqliteDatabase;
  registry: DriftRegistry;
  /** The SSRF-guarded agent description URLs are fetched through. */
  agent: Dispatcher;
  logger: DriftLogger;
  /** Time between the end of one round of checks and the start of the next. */
  intervalMs: number;
  /** False: no timer, checks run only on `checkNow()` (tests). Default true. */
  schedule?: boolean;
}

/** One source's drift, as `GET /admin/status` reports it. */
export type { DriftSourceReport } from '@gateway/core';

export interface DriftWatcher {
  /**
   * Checks every source now, or only `sources` (after any round in progress); resolves when done. Never
   * rejects. The push trigger (`gateway drift check`, `POST /admin/drift/check`) calls it.
   */
  checkNow(sources?: readonly string[]): Promise<void>;
  /**
   * Called with a verified lock before it is swapped in: re-reads the live description of each source whose
   * publication in use it changes, so the drift verdict on the new publication compares it with the description as
   * it is now (docs/drift.md › Publishing). Never rejects.
   */
  prepareFor?(lock: Lockfile): Promise<void>;
  /** Stops the timer; resolves when a round in progress has finished. */
  stop(): Promise<void>;
  report(): DriftSourceReport[];
}

interface LiveDocument {
  /** sha256 of the bytes read (skips re-normalising an unchanged document). */
  bytesDigest: string;
  /** The importer's document digest (the proposal's identity). */
  documentDigest: string;
  operations: Operation[];
  etag: string | null;
  lastModified: string | null;
}

interface SourceMemory {
  live?: LiveDocument;
  state: DriftState;
  /** Digest of the proposal currently shown (the live document differs from the publication). */
  proposalDigest?: string;
}

const URL_LOCATION = /^https?:\/\//i;

/**
 * Re-reads each source's description on an interval and blocks the tools whose operation changed or
 * vanished (DESIGN.md, lifecycle step 7). URL documents are fetched through the SSRF guard with
 * conditional requests (RFC 9110 §13.1: If-None-Match, If-Modified-Since); files are re-read.
 * An unreachable, oversized or invalid document changes nothing: the error is recorded and reported, and
 * the tools keep the state the last good check gave them.
 */
export function startDriftWatcher(options: DriftWatcherOptions): DriftWatcher {
  const { loaded, registry, logger } = options;
  const store = new DriftStore(options.database);
  const memory = new Map<string, SourceMemory>();
  const maxBytes = loaded.config.import?.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
  const timeoutMs = loaded.config.import?.timeoutMs ?? 15_000;
  // OpenAPI sources are watched here by re-reading their document; MCP sources are re-listed by their upstream
  // connection (docs/sources-mcp.md), not by this watcher.
  const openApiSources = new Map(
    Object.entries(loaded.config.sources).flatMap(([name, source]) => (source.kind === 'openapi' ? [[name, source] as const] : [])),
  );
  const sourceNames = [...openApiSources.keys()].sort();

  for (const source of sourceNames) {
    const document = openApiSources.get(source)!.document;
    const saved = store.loadState(source);
    const state: DriftState =
      saved && saved.document === document
        ? saved
        : {
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
    memory.set(source, { state });
    // A restart must not reopen drifted tools until the first check: re-apply the recorded blocks while
    // the publication in use is still the one they were computed against.
    if (state.blocked.length > 0 && state.publicationId === registry.snapshot().publications.get(source)) {
      registry.setBlocked(source, new Map(state.blocked.map((entry) => [entry.tool, entry.reason])));
    }
  }

  async function readDocument(
    source: string,
    previous: LiveDocument | undefined,
  ): Promise<{ text: string | null; etag: string | null; lastModified: string | null }> {
    const location = openApiSources.get(source)!.document;
    if (URL_LOCATION.test(location)) {
      const headers: Record<string, string> = {};
      // Validators only when the last document is in memory to fall back on after a 304.
      if (previous?.etag) headers['if-none-match'] = previous.etag;
      if (previous?.lastModified) headers['if-modified-since'] = previous.lastModified;
      // The same redirect rule as the CLI's import (guardedDocumentFetcher): each hop passes the guard again.
      const fetched = await guardedFetchText(location, {
        agent: options.agent,
        maxBytes,
        timeoutMs,
        headers,
        maxRedirects: DOCUMENT_MAX_REDIRECTS,
      });
      if (fetched.status === 304 && previous) return { text: null, etag: previous.etag, lastModified: previous.lastModified };
      if (fetched.status < 200 || fetched.status > 299) {
        throw new GatewayError('DRIFT_DOCUMENT_UNAVAILABLE', `${location} answered HTTP ${fetched.status}`);
      }
      return {
        text: decodeDocumentBytes(fetched.bytes, location),
        etag: fetched.headers.etag ?? null,
        lastModified: fetched.headers['last-modified'] ?? null,
      };
    }
    const path = resolveConfigPath(loaded, location);
    let size: number;
    try {
      size = (await stat(path)).size;
    } catch (error) {
      throw new GatewayError(
        'DRIFT_DOCUMENT_UNREADABLE',
        `cannot read ${location}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
    if (size > maxBytes) {
      throw new GatewayError('FETCH_RESPONSE_TOO_LARGE', `${location} is larger than ${maxBytes} bytes`);
    }
    return { text: decodeDocumentBytes(await readFile(path), location), etag: null, lastModified: null };
  }

  async function normalise(
    source: string,
    text: string,
    read: { etag: string | null; lastModified: string | null },
  ): Promise<LiveDocument> {
    const settings = openApiSources.get(source)!;
    const imported = await importOpenApiText(text, settings.document, {
      baseDirectory: loaded.directory,
      allowRemoteRefs: settings.allowRemoteRefs ?? false,
      ...(settings.server === undefined ? {} : { server: settings.server }),
      maxDocumentBytes: maxBytes,
      timeoutMs,
      // Remote $refs: the one document fetcher the CLI injects too, so both decide alike on every URL.
      fetchText: guardedDocumentFetcher(options.agent),
    });
    return { bytesDigest: sha256Digest(text), documentDigest: imported.documentDigest, operations: imported.operations, ...read };
  }

  /** The in-use publication of the verified lock the registry serves (never re-read), when it is `publicationId`. */
  function servedPublication(lock: Lockfile | null, source: string, publicationId: string): Publication | undefined {
    const lockSource = lock ? findSource(lock, source) : undefined;
    const publication = lockSource?.kind === 'openapi' ? inUsePublication(lockSource) : undefined;
    return publication?.id === publicationId ? publication : undefined;
  }

  /**
   * Compares the live document in memory with the publication in use, and applies the outcome. Synchronous on
   * purpose: run from a snapshot swap, it sets the blocks before any request can use the new snapshot.
   */
  function evaluate(source: string): void {
    const entry = memory.get(source)!;
    const live = entry.live;
    if (!live) return;
    const snapshot = registry.snapshot();
    const publicationId = snapshot.publications.get(source) ?? null;
    let comparison: DriftComparison | undefined;
    if (publicationId) {
      const offered = [...snapshot.tools.values()].flatMap((tool) =>
        tool.sourceName === source && tool.operation ? [tool.operation] : [],
      );
      const publication = servedPublication(snapshot.lock, source, publicationId);
      comparison = compareWithPublication(offered, live.operations, publication?.notOffered ?? []);
      // The very document it was published from: what it leaves out was left out on purpose, nothing is new.
      if (publication?.documentDigest === live.documentDigest) comparison.added = [];
    }
    const blocked = comparison ? [...comparison.blocked].map(([tool, reason]) => ({ tool, reason })) : [];
    registry.setBlocked(source, comparison?.blocked ?? new Map());
    // Tools added upstream are drift too (a proposal waits for a person), though nothing needs blocking.
    const hasDifference = comparison !== undefined && comparison.changed.length + comparison.removed.length + comparison.added.length > 0;
    if (hasDifference) {
      const location = sourceLocation(openApiSources.get(source)!);
      store.recordProposal(
        {
          source,
          digest: live.documentDigest,
          publicationId,
          detectedAt: new Date().toISOString(),
          added: comparison!.added,
          changed: comparison!.changed.map((change) => change.tool),
          removed: comparison!.removed,
          ...describeProposal(snapshot.lock, source, location, {
            kind: 'openapi',
            documentDigest: live.documentDigest,
            operations: live.operations,
          }),
        },
        live.operations,
      );
      entry.proposalDigest = live.documentDigest;
    } else {
      delete entry.proposalDigest;
    }
    const previousStatus = entry.state.status;
    const previousBlocked = JSON.stringify(entry.state.blocked);
    const status: DriftStatus = !publicationId ? 'not-published' : hasDifference ? 'drifted' : 'in-sync';
    entry.state = {
      ...entry.state,
      etag: live.etag,
      lastModified: live.lastModified,
      documentDigest: live.documentDigest,
      status,
      error: null,
      publicationId,
      blocked,
    };
    store.saveState(entry.state);
    if (status === 'drifted' && (previousStatus !== 'drifted' || JSON.stringify(blocked) !== previousBlocked)) {
      logger.warn(
        { source, blocked: blocked.map((item) => item.tool), added: comparison!.added, digest: live.documentDigest },
        blocked.length > 0 ? 'drift: tools blocked' : 'drift: the live description offers operations the publication does not',
      );
    } else if (status === 'in-sync' && previousStatus === 'drifted') {
      logger.info({ source }, 'drift: description matches the publication again; tools unblocked');
    }
  }

  async function checkSource(source: string): Promise<void> {
    const entry = memory.get(source)!;
    const checkedAt = new Date().toISOString();
    try {
      const read = await readDocument(source, entry.live);
      if (read.text !== null) {
        const bytesDigest = sha256Digest(read.text);
        entry.live =
          entry.live?.bytesDigest === bytesDigest
            ? { ...entry.live, etag: read.etag, lastModified: read.lastModified }
            : await normalise(source, read.text, read);
      }
      entry.state = { ...entry.state, checkedAt };
      evaluate(source);
    } catch (error) {
      // Nothing changes on a failed read: blocked tools stay blocked, callable ones stay callable.
      const gatewayError = isGatewayError(error)
        ? error
        : new GatewayError('DRIFT_CHECK_FAILED', (error as Error)?.message ?? String(error));
      entry.state = { ...entry.state, checkedAt, status: 'error', error: { code: gatewayError.code, message: gatewayError.message } };
      store.saveState(entry.state);
      logger.warn({ source, code: gatewayError.code, error: gatewayError.message }, 'drift check failed; nothing changed');
    }
  }

  let round: Promise<void> = Promise.resolve();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  function runRound(only?: readonly string[]): Promise<void> {
    round = round
      .then(async () => {
        for (const source of only ?? sourceNames) {
          if (!memory.has(source)) continue;
          if (stopped) return;
          await checkSource(source);
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

  // A new lock (hot reload): re-compared at once, in the swap itself, with the live descriptions `prepareFor`
  // re-read just before it, so no verdict on a new publication rests on a description read before it was made.
  const unsubscribe = registry.onChange?.((change) => {
    if (change.kind !== 'snapshot' || stopped) return;
    for (const source of sourceNames) {
      try {
        evaluate(source);
      } catch (error) {
        logger.error({ source, error: (error as Error)?.message }, 'drift re-evaluation failed');
      }
    }
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
    },
    report() {
      return sourceNames.map((source) => {
        const { state, proposalDigest } = memory.get(source)!;
        const proposal = proposalDigest ? store.proposal(source, proposalDigest) : undefined;
        return reportOf(state, proposal);
      });
    },
  };
}
