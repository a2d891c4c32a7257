import { GatewayError, isGatewayError, sourceLocation } from '@gateway/core';
import type { ChangeFeed } from '../store/changes.js';
import { liveDocumentAfter, readDocument, type DocumentReading, type LiveDocument, type OpenApiSourceSettings } from './live-document.js';
import type { DriftProposal, DriftState, DriftStore } from './ports.js';
import { judgeLiveDocument, logVerdict, type DriftVerdict } from './verdict.js';
import type { DriftLogger, DriftRegistry } from './types.js';

/** What the watcher keeps of one source between checks. */
export interface SourceMemory {
  settings: OpenApiSourceSettings;
  live?: LiveDocument;
  state: DriftState;
  /** The proposal shown while the live document differs from the publication (as last recorded). */
  proposal?: DriftProposal;
}

export interface SourceChecks {
  /** Reads one source's description and applies the verdict; records it before resolving. Never rejects. */
  check(source: string): Promise<void>;
  /** Judges the live document in memory again (a new snapshot) at once; records it in the background. */
  rejudge(source: string): void;
  /** Resolves when every recording started so far is done. */
  settled(): Promise<void>;
}

/**
 * The checks of the OpenAPI sources in `memory`: read, normalise, judge, record. An unreachable, oversized or invalid
 * document changes nothing: the error is recorded and reported, and the tools keep the state the last good check gave
 * them. Recordings run one after another, in the order the verdicts were reached.
 */
export function createSourceChecks(context: {
  memory: ReadonlyMap<string, SourceMemory>;
  reading: DocumentReading;
  store: DriftStore;
  registry: DriftRegistry;
  logger: DriftLogger;
  changes?: ChangeFeed;
}): SourceChecks {
  const { memory, store, logger } = context;
  let recordings: Promise<void> = Promise.resolve();
  /** What was last recorded of each source's blocks: a change of them is announced to the other processes. */
  const announced = new Map<string, string>();

  async function announce(state: DriftState): Promise<void> {
    const key = JSON.stringify([state.publicationId, state.blocked]);
    if (!context.changes || announced.get(state.source) === key) return;
    await context.changes.publish('drift-blocks', { source: state.source });
    announced.set(state.source, key);
  }

  function record(entry: SourceMemory, state: DriftState, proposal?: DriftVerdict['proposal'], operations?: LiveDocument['operations']) {
    recordings = recordings
      .then(async () => {
        if (proposal) {
          const recorded = await store.recordProposal(proposal, operations ?? []);
          // Shown as recorded (the first sighting's time) unless a newer verdict replaced it meanwhile.
          if (entry.proposal?.digest === recorded.digest) entry.proposal = recorded;
        }
        await store.saveState(state);
        await announce(state);
      })
      .catch((error: unknown) => logger.error({ source: state.source, error: (error as Error)?.message }, 'drift: recording failed'));
    return recordings;
  }

  function judge(source: string): Promise<void> {
    const entry = memory.get(source)!;
    const live = entry.live;
    if (!live) return Promise.resolve();
    const verdict = judgeLiveDocument({
      registry: context.registry,
      source,
      location: sourceLocation(entry.settings),
      live,
      state: entry.state,
    });
    logVerdict(logger, entry.state, verdict);
    entry.state = verdict.state;
    if (verdict.proposal) {
      const shown = entry.proposal?.digest === verdict.proposal.digest ? entry.proposal : undefined;
      entry.proposal = {
        ...verdict.proposal,
        detectedAt: shown?.detectedAt ?? verdict.proposal.detectedAt,
        lastSeenAt: verdict.proposal.detectedAt,
      };
    } else {
      delete entry.proposal;
    }
    return record(entry, verdict.state, verdict.proposal, live.operations);
  }

  async function check(source: string): Promise<void> {
    const entry = memory.get(source)!;
    const checkedAt = new Date().toISOString();
    try {
      const read = await readDocument(context.reading, entry.settings.document, entry.live);
      entry.live = await liveDocumentAfter(context.reading, entry.settings, entry.live, read);
      entry.state = { ...entry.state, checkedAt };
      await judge(source);
    } catch (error) {
      // Nothing changes on a failed read: blocked tools stay blocked, callable ones stay callable.
      const gatewayError = isGatewayError(error)
        ? error
        : new GatewayError('DRIFT_CHECK_FAILED', (error as Error)?.message ?? String(error));
      entry.state = { ...entry.state, checkedAt, status: 'error', error: { code: gatewayError.code, message: gatewayError.message } };
      logger.warn({ source, code: gatewayError.code, error: gatewayError.message }, 'drift check failed; nothing changed');
      await record(entry, entry.state);
    }
  }

  return {
    check,
    rejudge(source) {
      try {
        void judge(source);
      } catch (error) {
        logger.error({ source, error: (error as Error)?.message }, 'drift re-evaluation failed');
      }
    },
    settled: () => recordings,
  };
}
