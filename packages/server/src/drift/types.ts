import type { Dispatcher } from 'undici';
import type { DriftSourceReport, LoadedConfig, LockedOperation, Lockfile } from '@gateway/core';
import type { ChangeFeed } from '../store/changes.js';
import type { DriftStore } from './ports.js';

/** One source's drift, as `GET /admin/status` reports it. */
export type { DriftSourceReport } from '@gateway/core';

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
  store: DriftStore;
  registry: DriftRegistry;
  /** The SSRF-guarded agent description URLs are fetched through. */
  agent: Dispatcher;
  logger: DriftLogger;
  /** Time between the end of one round of checks and the start of the next. */
  intervalMs: number;
  /** False: no timer, checks run only on `checkNow()` (tests). Default true. */
  schedule?: boolean;
  /** Asked before each source's check: false skips it (this process no longer holds the drift lease: leader.ts). */
  mayCheck?: () => boolean;
  /**
   * Shared by every process on the store: the leader announces each new set of blocked tools (`drift-blocks`), and
   * a follower applies the recorded state as soon as it hears of it (follower.ts).
   */
  changes?: ChangeFeed;
}

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
