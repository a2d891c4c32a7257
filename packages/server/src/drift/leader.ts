import { processHolder } from '../store/lease-keeper.js';
import type { Lease, Leases } from '../store/leases.js';
import { followDrift } from './follower.js';
import type { DriftWatcher, DriftWatcherOptions } from './types.js';
import { startDriftWatcher } from './watcher.js';

/** The lease whose holder checks the descriptions; every other process sharing the store follows what it records. */
export const DRIFT_LEADER_LEASE = 'drift-leader';
/** How long the leader's lease lasts unless renewed (renewed every third of it): the longest a takeover waits. */
export const DRIFT_LEASE_MS = 15_000;

export interface DriftLeadershipOptions extends Omit<DriftWatcherOptions, 'mayCheck'> {
  leases: Leases;
  /** This process, as the lease names its holder (unique among the processes sharing the store). Default: host, pid, random. */
  holder?: string;
  leaseMs?: number;
  /** How often a follower reads what the leader recorded (follower.ts). */
  followIntervalMs?: number;
}

export interface DriftLeadership extends DriftWatcher {
  /** True while this process holds the `drift-leader` lease and checks the descriptions. */
  isLeader(): boolean;
}

/**
 * Drift for one of several processes on one store (`gateway serve --workers N`, replicas): whoever holds the
 * `drift-leader` lease checks the descriptions (watcher.ts); the others apply what it records (follower.ts). The
 * leader renews its lease every third of its duration and stops checking the moment a renewal fails or its lease
 * runs out unrenewed, so two processes never check at once; a follower tries to take the lease as often, so when the
 * leader dies (its lease expires) or stops (it releases the lease) another takes over.
 */
export async function startDrift(options: DriftLeadershipOptions): Promise<DriftLeadership> {
  const { leases, logger } = options;
  const holder = options.holder ?? processHolder();
  const leaseMs = options.leaseMs ?? DRIFT_LEASE_MS;
  let lease: Lease | undefined;
  /** The local time until which this process may check: the start of its last successful take or renewal plus leaseMs. */
  let validUntil = 0;
  let current: DriftWatcher | undefined;
  let isLeading = false;
  let stopped = false;

  const mayCheck = () => !stopped && lease !== undefined && Date.now() < validUntil;

  async function leaseAttempt(): Promise<Lease | undefined> {
    const startedAt = Date.now();
    const held = lease
      ? await leases.renew(DRIFT_LEADER_LEASE, holder, lease.token, leaseMs, startedAt)
      : await leases.take(DRIFT_LEADER_LEASE, holder, leaseMs, startedAt);
    if (held) validUntil = startedAt + leaseMs;
    return held;
  }

  async function lead(taken: Lease): Promise<void> {
    lease = taken;
    await current?.stop();
    current = await startDriftWatcher({ ...options, mayCheck });
    isLeading = true;
    logger.info({ holder, token: taken.token }, 'drift: this process holds the drift-leader lease and checks the descriptions');
  }

  async function follow(reason?: string): Promise<void> {
    if (lease) logger.warn({ holder, reason }, 'drift: the drift-leader lease is lost; following the recorded drift state');
    lease = undefined;
    isLeading = false;
    await current?.stop();
    current = undefined;
    const { loaded, store, registry } = options;
    current = await followDrift({
      loaded,
      store,
      registry,
      ...(options.followIntervalMs ? { intervalMs: options.followIntervalMs } : {}),
      ...(options.changes ? { changes: options.changes } : {}),
    });
  }

  /** One step: keep, take or lose the lease, and switch role when it changes. */
  async function step(): Promise<void> {
    let held: Lease | undefined;
    try {
      held = await leaseAttempt();
    } catch (error) {
      if (lease) return follow((error as Error)?.message).catch(() => undefined);
      return;
    }
    if (held && !isLeading) await lead(held);
    else if (held) lease = held;
    else if (isLeading || !current) await follow('taken by another process');
  }

  // The first step at start-up, before the gateway serves: a store that cannot be read fails the start.
  const first = await leaseAttempt();
  if (first) await lead(first);
  else await follow();
  let steps: Promise<void> = Promise.resolve();
  const timer = setInterval(
    () => {
      steps = steps
        .then(() => (stopped ? undefined : step()))
        .catch((error: unknown) => {
          logger.error({ error: (error as Error)?.message }, 'drift: the leadership step failed');
        });
    },
    Math.max(1, Math.floor(leaseMs / 3)),
  );
  timer.unref();

  return {
    isLeader: () => isLeading && mayCheck(),
    checkNow: (sources) => current?.checkNow(sources) ?? Promise.resolve(),
    prepareFor: (lock) => current?.prepareFor?.(lock) ?? Promise.resolve(),
    report: () => current?.report() ?? [],
    async stop() {
      stopped = true;
      clearInterval(timer);
      await steps.catch(() => undefined);
      await current?.stop();
      // Released, so another process takes over at once rather than after the expiry.
      if (lease) await leases.release(DRIFT_LEADER_LEASE, holder, lease.token).catch(() => undefined);
    },
  };
}
