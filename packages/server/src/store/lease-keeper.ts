import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Lease, Leases } from './leases.js';

/** A holder name no other process uses: the host and pid say who it is in the store, the random part makes it unique. */
export function processHolder(): string {
  return `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
}

export interface LeaseKeeperOptions {
  leases: Leases;
  name: string;
  /** This process, as the lease names its holder (unique among the processes sharing the store): processHolder(). */
  holder: string;
  /** How long the lease lasts unless renewed (renewed every third of it): the longest a takeover waits. */
  leaseMs: number;
  /** This process took the lease (a new token): awaited before the next step. */
  onTaken(lease: Lease): Promise<void> | void;
  /** This process lost the lease it held (another took it, or a renewal failed): awaited before the next step. */
  onLost(reason: string): Promise<void> | void;
  /** A step that failed otherwise than by losing the lease (its callbacks threw). */
  onStepError(error: unknown): void;
}

export interface LeaseKeeper {
  /** Makes the first attempt (a store that cannot be read rejects it), then one every third of the lease's duration. */
  start(): Promise<void>;
  /**
   * The lease while this process may act on it: taken or renewed less than `leaseMs` ago (by its own clock, from
   * before the store answered), and not stopped. Undefined otherwise: whoever holds it, this process must not act.
   */
  held(): Lease | undefined;
  /** Stops trying, and releases the lease when held, so another process takes it at once rather than at its expiry. */
  stop(): Promise<void>;
}

/**
 * Keeps a named lease (./leases.ts) for one of several processes sharing the store: takes it at once when free,
 * renews it every third of its duration while held, tries again as often while another holds it (so when that
 * holder dies, its lease expires and this process takes over; when it stops, it releases the lease). A renewal
 * that fails or throws counts as lost: `held()` is undefined from then on, and from the moment the lease runs out
 * unrenewed, so two processes never act at once on leases that are honoured by time; a write that carries the
 * token (`Leases.isHeld` in its unit of work) is refused outright once a later holder exists.
 */
export function leaseKeeper(options: LeaseKeeperOptions): LeaseKeeper {
  const { leases, name, holder, leaseMs } = options;
  let lease: Lease | undefined;
  /** The local time until which this process may act: the start of its last successful take or renewal plus leaseMs. */
  let validUntil = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let steps: Promise<void> = Promise.resolve();

  async function attempt(): Promise<Lease | undefined> {
    const startedAt = Date.now();
    const kept = lease
      ? await leases.renew(name, holder, lease.token, leaseMs, startedAt)
      : await leases.take(name, holder, leaseMs, startedAt);
    if (kept) validUntil = startedAt + leaseMs;
    return kept;
  }

  /** One step: keep, take or lose the lease, and say so when it changes. */
  async function step(): Promise<void> {
    let kept: Lease | undefined;
    try {
      kept = await attempt();
    } catch (error) {
      if (!lease) return;
      lease = undefined;
      return options.onLost((error as Error)?.message ?? String(error));
    }
    const hadIt = lease !== undefined;
    lease = kept;
    if (kept && !hadIt) await taken(kept);
    else if (!kept && hadIt) await options.onLost('taken by another process');
  }

  /**
   * Hands a lease just taken to `onTaken`. When that fails, the lease is given back at once: a process that could not
   * take up the role must not keep others from it, and its next step takes the lease (and tries the role) again.
   */
  async function taken(kept: Lease): Promise<void> {
    try {
      await options.onTaken(kept);
    } catch (error) {
      lease = undefined;
      validUntil = 0;
      await leases.release(name, holder, kept.token).catch(() => undefined);
      throw error;
    }
  }

  return {
    async start() {
      const first = await attempt();
      lease = first;
      if (first) await taken(first);
      timer = setInterval(
        () => {
          steps = steps.then(() => (stopped ? undefined : step())).catch(options.onStepError);
        },
        Math.max(1, Math.floor(leaseMs / 3)),
      );
      timer.unref();
    },
    held: () => (!stopped && lease !== undefined && Date.now() < validUntil ? lease : undefined),
    async stop() {
      stopped = true;
      clearInterval(timer);
      await steps.catch(() => undefined);
      if (lease) await leases.release(name, holder, lease.token).catch(() => undefined);
      lease = undefined;
    },
  };
}
