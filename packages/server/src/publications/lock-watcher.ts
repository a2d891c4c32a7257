import { sha256Digest, type Lockfile } from '@gateway/core';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { PublicationRegistry } from './registry.js';

/** Minimal logger shape (pino and Fastify's logger both fit). */
export interface WatcherLogger {
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}

export interface LockWatcherOptions {
  lockPath: string;
  registry: PublicationRegistry;
  /**
   * Verifies the bytes the watcher read (core `verifiedLockFrom`); throws when they do not verify. The watcher
   * reads the file once per change and hands those bytes over, so what is verified is what was digested.
   */
  load: (bytes: Uint8Array) => Promise<Lockfile>;
  logger: WatcherLogger;
  /** Quiet period after the last file event before reloading (editors and `git checkout` write in bursts). */
  debounceMs?: number;
  /** Digest of the bytes currently served, so an unchanged rewrite does not reload. */
  initialDigest?: string;
  /** Called after every reload attempt (tests wait on it). */
  onReload?: (outcome: LockReloadOutcome) => void;
}

export type LockReloadOutcome =
  | { status: 'swapped'; generation: number; digest: string }
  | { status: 'unchanged'; digest: string }
  | { status: 'refused'; code: string; message: string; digest: string }
  | { status: 'missing' };

export interface LockWatcher {
  /** Re-reads the file now (also what a file event triggers after the debounce). */
  reload(): Promise<LockReloadOutcome>;
  close(): void;
}

/**
 * Watches the lock file and swaps in each new version that verifies; a version that does not verify is
 * refused and logged, and the last good snapshot keeps serving.
 *
 * The directory is watched rather than the file: `writeLockFile` replaces the file by rename, which ends a
 * watch on the old inode. Events are debounced and the content digest compared, so duplicate events and
 * touch-only changes cost nothing.
 */
export function watchLock(options: LockWatcherOptions): LockWatcher {
  const debounceMs = options.debounceMs ?? 150;
  const fileName = basename(options.lockPath);
  let servedDigest = options.initialDigest;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<LockReloadOutcome> | undefined;
  let again = false;
  let closed = false;

  async function reloadOnce(): Promise<LockReloadOutcome> {
    let bytes: Buffer;
    try {
      bytes = await readFile(options.lockPath);
    } catch {
      options.logger.warn({ lockPath: options.lockPath }, 'lock file is missing; keeping the last good publications');
      return { status: 'missing' };
    }
    const digest = sha256Digest(bytes);
    if (digest === servedDigest) return { status: 'unchanged', digest };
    try {
      const lock = await options.load(bytes);
      const snapshot = options.registry.replace(lock);
      servedDigest = digest;
      options.logger.info(
        { lockPath: options.lockPath, digest, generation: snapshot.generation, tools: snapshot.names.length },
        'reloaded tools.lock',
      );
      return { status: 'swapped', generation: snapshot.generation, digest };
    } catch (error) {
      const code = (error as { code?: string }).code ?? 'LOCK_RELOAD_FAILED';
      const message = (error as Error).message;
      options.logger.error(
        { lockPath: options.lockPath, digest, code, details: (error as { details?: unknown }).details },
        `refused the new tools.lock; the last good publications keep serving: ${message}`,
      );
      return { status: 'refused', code, message, digest };
    }
  }

  async function reload(): Promise<LockReloadOutcome> {
    // One reload at a time; a change arriving meanwhile triggers exactly one more pass.
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let outcome: LockReloadOutcome;
      do {
        again = false;
        outcome = await reloadOnce();
        options.onReload?.(outcome);
      } while (again && !closed);
      return outcome;
    })().finally(() => {
      running = undefined;
    });
    return running;
  }

  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(options.lockPath), { persistent: false }, (_event, changed) => {
      if (closed) return;
      if (changed !== null && changed !== fileName) return;
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timer = undefined;
        void reload();
      }, debounceMs);
      timer.unref();
    });
    watcher.on('error', (error) => options.logger.warn({ error: error.message }, 'lock watcher error'));
  } catch (error) {
    options.logger.warn({ error: (error as Error).message }, 'cannot watch the lock directory; hot reload is off');
  }

  return {
    reload,
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      watcher?.close();
    },
  };
}
