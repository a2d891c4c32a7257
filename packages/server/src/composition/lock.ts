/**
 * tools.lock while serving: verified before each swap (a refused reload keeps what is served), the drift verdict
 * on a new publication made first, and the last reload that changed something kept for `gateway status`. A swap is
 * announced on the change feed (`publication-changed`, the digest now served); a process that hears of a digest
 * it does not serve re-reads its lock at once, so a lock written where its file watcher sees no event (another
 * host's write to a shared volume) is served within a second too.
 */
import type { Logger } from 'pino';
import { verifiedLockFrom, type LoadedConfig, type LockReloadStatus, type Lockfile } from '@gateway/core';
import { watchLock, type LockWatcher } from '../publications/lock-watcher.js';
import type { ChangeFeed } from '../store/changes.js';
import type { PublicationRegistry } from '../publications/registry.js';
import type { Closers } from './closers.js';

export interface ServedLock {
  watcher: LockWatcher;
  /** The last reload that did not leave the served lock as it was (a swap or a refusal). */
  lastReload(): LockReloadStatus | undefined;
}

export function watchServedLock(
  context: {
    lockPath: string;
    loaded: LoadedConfig;
    registry: PublicationRegistry;
    logger: Logger;
    initialDigest: string;
    debounceMs?: number;
    /** Before the swap: the drift verdict compares a new publication with each description as it is now. */
    prepareFor?: (lock: Lockfile) => Promise<void>;
    changes?: ChangeFeed;
  },
  closers: Closers,
): ServedLock {
  let lastReload: LockReloadStatus | undefined;
  let servedDigest = context.initialDigest;
  const { changes, logger } = context;
  const watcher = watchLock({
    lockPath: context.lockPath,
    registry: context.registry,
    onReload: (outcome) => {
      if (outcome.status === 'swapped') {
        servedDigest = outcome.digest;
        changes?.publish('publication-changed', { digest: outcome.digest }).catch((error: unknown) => {
          logger.warn({ error: (error as Error).message }, 'announcing a new publication failed');
        });
      }
      if (outcome.status === 'unchanged') return;
      const at = new Date().toISOString();
      lastReload =
        outcome.status === 'refused'
          ? { status: 'refused', at, code: outcome.code, message: outcome.message }
          : { status: outcome.status, at };
    },
    load: async (bytes) => {
      const { lock } = await verifiedLockFrom(bytes, context.lockPath, context.loaded);
      // Not as the last interval check read it (a description changed, imported and published within one).
      await context.prepareFor?.(lock);
      return lock;
    },
    logger: context.logger,
    ...(context.debounceMs === undefined ? {} : { debounceMs: context.debounceMs }),
    initialDigest: context.initialDigest,
  });
  const stopListening = changes?.subscribe('publication-changed', ({ digest }) => {
    if (digest !== servedDigest) watcher.reload().catch(() => undefined);
  });
  closers.add(() => {
    stopListening?.();
    watcher.close();
  });
  return { watcher, lastReload: () => lastReload };
}
