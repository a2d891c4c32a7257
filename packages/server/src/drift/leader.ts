import { leaseKeeper, processHolder } from '../store/lease-keeper.js';
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
 * `drift-leader` lease checks the descriptions (watcher.ts); the others apply what it records (follower.ts). The lease
 * is kept by the one lease keeper (store/lease-keeper.ts): the leader stops checking the moment a renewal fails or its
 * lease runs out unrenewed, so two processes never check at once; a follower tries to take the lease as often, so when
 * the leader dies (its lease expires) or stops (it releases the lease) another takes over.
 */
export async function startDrift(options: DriftLeadershipOptions): Promise<DriftLeadership> {
  const { logger } = options;
  const holder = options.holder ?? processHolder();
  let current: DriftWatcher | undefined;
  let isLeading = false;

  const keeper = leaseKeeper({
    leases: options.leases,
    name: DRIFT_LEADER_LEASE,
    holder,
    leaseMs: options.leaseMs ?? DRIFT_LEASE_MS,
    onTaken: lead,
    onLost: (reason) => follow(reason).catch(() => undefined),
    onStepError: (error) => logger.error({ error: (error as Error)?.message }, 'drift: the leadership step failed'),
  });
  const mayCheck = () => keeper.held() !== undefined;

  async function lead(taken: Lease): Promise<void> {
    await current?.stop();
    current = await startDriftWatcher({ ...options, mayCheck });
    isLeading = true;
    logger.info({ holder, token: taken.token }, 'drift: this process holds the drift-leader lease and checks the descriptions');
  }

  async function follow(reason?: string): Promise<void> {
    if (isLeading) logger.warn({ holder, reason }, 'drift: the drift-leader lease is lost; following the recorded drift state');
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

  // The first attempt at start-up, before the gateway serves: a store that cannot be read fails the start.
  await keeper.start();
  if (!isLeading) await follow();

  return {
    isLeader: () => isLeading && mayCheck(),
    checkNow: (sources) => current?.checkNow(sources) ?? Promise.resolve(),
    prepareFor: (lock) => current?.prepareFor?.(lock) ?? Promise.resolve(),
    report: () => current?.report() ?? [],
    async stop() {
      // Released as it stops, so another process takes over at once rather than after the expiry; from then on this
      // process may not check (mayCheck), and its watcher or follower stops.
      await keeper.stop();
      await current?.stop();
    },
  };
}
