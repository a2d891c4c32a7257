import cluster, { type Worker } from 'node:cluster';
import { GatewayError, isErrorCode } from '@gateway/core';
import { servingExecArgv } from '@gateway/runtime/node-flags';
import { answerClusterMetrics } from './telemetry/index.js';

/**
 * `gateway serve --workers N`: the primary process forks N workers (node:cluster) that share the listen
 * socket; each runs the whole gateway on the same storage: the SQLite database (WAL mode, busy_timeout:
 * store/sqlite/database.ts), or PostgreSQL (`storage.kind: postgres`), where each worker opens its own pool and
 * change-feed connection, as replicas do, and no receipt journal is kept (composition/records.ts).
 *
 * What is single and why:
 * - Worker 1 starts alone first: it applies migrations (on PostgreSQL under the runner's advisory lock too, so
 *   replicas on other hosts starting at once wait) and, on a fresh vault, generates the signing keys
 *   (or rotates them when due); the others start once it is listening, so they all load the same keys. A
 *   restarted worker never rotates: the others, which keep their keys in memory, would refuse its tokens.
 * - Nothing else goes by worker number: drift checks, webhook delivery and person-token refreshes go by the
 *   storage's leases, so workers and replicas on other hosts take turns alike.
 * - Drift checks run in the worker that holds the `drift-leader` lease (drift/leader.ts); the others apply the
 *   blocks it records (drift/follower.ts), and one of them takes the lease over when that worker dies. The lock
 *   watcher runs in every worker: each verifies and swaps its own copy.
 * - Sessions, codes and refresh tokens are in the database; revocation is read from it on every /mcp
 *   request, so a session revoked through any worker (or the CLI) is refused by all of them at once.
 * - What a worker holds in memory and another one changes (a revocation's streams, drift blocks, a new publication,
 *   a paused or resumed webhook endpoint) is announced on the change feed (store/changes.ts): every worker acts
 *   on it within a second.
 *
 * SIGTERM/SIGINT: every worker shuts down gracefully, then the primary exits. A worker that dies is
 * restarted after a delay that doubles with each quick failure (0.5 s … 30 s).
 */

/** The environment variable that tells a forked process which worker it is (1-based). */
export const WORKER_ID_VARIABLE = 'GATEWAY_WORKER_ID';
/** Set for a worker forked to replace one that died (not part of the cluster's first start). */
export const WORKER_RESTARTED_VARIABLE = 'GATEWAY_WORKER_RESTARTED';
export const MAX_WORKERS = 64;
const RESTART_DELAY_MS = 500;
const MAX_RESTART_DELAY_MS = 30_000;
/** A worker that ran this long before dying is not failing repeatedly: its next restart is quick again. */
const HEALTHY_RUN_MS = 30_000;

export interface WorkerMessage {
  type: 'gateway-ready' | 'gateway-failed';
  mcpUrl?: string;
  url?: string;
  error?: { code: string; message: string };
}

/** Parses `--workers`: an integer from 1 to MAX_WORKERS. */
export function parseWorkers(value: string): number {
  const count = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(count) || count < 1 || count > MAX_WORKERS) {
    throw new GatewayError('WORKERS_INVALID', `--workers must be a whole number from 1 to ${MAX_WORKERS}, got '${value}'`);
  }
  return count;
}

/** The worker id of this process, when it is a gateway worker forked by superviseWorkers. */
export function currentWorkerId(): number | undefined {
  if (!cluster.isWorker) return undefined;
  const id = Number(process.env[WORKER_ID_VARIABLE]);
  return Number.isInteger(id) && id > 0 ? id : undefined;
}

/** True when this worker replaces one that died. */
export function isRestartedWorker(): boolean {
  return cluster.isWorker && process.env[WORKER_RESTARTED_VARIABLE] === '1';
}

export interface SupervisorLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

export interface Supervisor {
  /** The URLs worker 1 reported once every worker was listening. */
  mcpUrl: string;
  url: string;
  /** Resolves when every worker has stopped after `stop()` or a signal. */
  stopped: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Forks `count` workers of the current command (cluster re-runs the same argv with WORKER_ID_VARIABLE set)
 * and supervises them. Rejects when a worker fails to start (its error is what it reported).
 */
export async function superviseWorkers(options: {
  count: number;
  log: SupervisorLog;
  shutdownGraceMs?: number;
  handleSignals?: boolean;
}): Promise<Supervisor> {
  const { count, log } = options;
  const workers = new Map<number, Worker>();
  const failures = new Map<number, { count: number; startedAt: number }>();
  let stopping = false;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  // Workers run with the primary's Node flags plus the bounded young generation (@gateway/runtime's node-flags.ts), even when the
  // primary was started by hand without it: each worker is a whole gateway, the primary only supervises.
  cluster.setupPrimary({ execArgv: servingExecArgv(process.execArgv, process.env.NODE_OPTIONS) });
  // A scrape reaches one worker, which asks here for every worker's metrics (telemetry/cluster-metrics.ts).
  answerClusterMetrics();

  function fork(id: number, isRestart = false): Promise<WorkerMessage> {
    const worker = cluster.fork({ [WORKER_ID_VARIABLE]: String(id), ...(isRestart ? { [WORKER_RESTARTED_VARIABLE]: '1' } : {}) });
    workers.set(id, worker);
    const startedAt = Date.now();
    const previous = failures.get(id);
    failures.set(id, { count: previous?.count ?? 0, startedAt });
    return new Promise((resolve, reject) => {
      let isReady = false;
      worker.on('message', (message: WorkerMessage) => {
        if (message?.type === 'gateway-ready') {
          isReady = true;
          log.info({ worker: id, pid: worker.process.pid }, 'worker listening');
          resolve(message);
        } else if (message?.type === 'gateway-failed') {
          reject(
            new GatewayError(
              message.error?.code !== undefined && isErrorCode(message.error.code) ? message.error.code : 'WORKER_START_FAILED',
              message.error?.message ?? `worker ${id} failed to start`,
            ),
          );
        }
      });
      worker.on('exit', (code, signal) => {
        if (workers.get(id) === worker) workers.delete(id);
        if (!isReady) reject(new GatewayError('WORKER_START_FAILED', `worker ${id} exited before listening (code ${code ?? signal})`));
        if (stopping) {
          if (workers.size === 0) resolveStopped();
          return;
        }
        if (!isReady) return;
        const record = failures.get(id)!;
        const ranMs = Date.now() - record.startedAt;
        const failuresInARow = ranMs >= HEALTHY_RUN_MS ? 0 : record.count + 1;
        failures.set(id, { count: failuresInARow, startedAt: record.startedAt });
        const delayMs = Math.min(MAX_RESTART_DELAY_MS, RESTART_DELAY_MS * 2 ** Math.max(0, failuresInARow - 1));
        log.error({ worker: id, pid: worker.process.pid, code, signal, restartInMs: delayMs }, 'worker stopped unexpectedly; restarting');
        setTimeout(() => {
          if (stopping) return;
          fork(id, true).catch((error: Error) => log.error({ worker: id, error: error.message }, 'worker restart failed'));
        }, delayMs).unref();
      });
    });
  }

  const stop = (): Promise<void> => {
    if (!stopping) {
      stopping = true;
      if (workers.size === 0) resolveStopped();
      for (const worker of workers.values()) worker.process.kill('SIGTERM');
      // A worker that does not finish within its grace period (plus a margin) is killed.
      const deadline = setTimeout(
        () => {
          for (const worker of workers.values()) worker.process.kill('SIGKILL');
        },
        (options.shutdownGraceMs ?? 10_000) + 5_000,
      );
      deadline.unref();
      void stopped.then(() => clearTimeout(deadline));
    }
    return stopped;
  };

  if (options.handleSignals) {
    const onSignal = (signal: NodeJS.Signals) => {
      log.info({ signal }, 'shutting down all workers');
      void stop();
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }

  try {
    // Worker 1 first (migrations, signing keys), then the rest together.
    const first = await fork(1);
    await Promise.all(Array.from({ length: count - 1 }, (_, index) => fork(index + 2)));
    return { mcpUrl: first.mcpUrl!, url: first.url!, stopped, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
