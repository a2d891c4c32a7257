import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { GatewayError, loadVerifiedLock, type LoadedConfig, type Lockfile } from '@gateway/core';
import { createVault, LISTEN_ADDRESS_FIX, listenAddressProblem, listenAddressText } from '@gateway/runtime';
import { createAdminPlugin } from './admin/index.js';
import { consolePluginOf, type ConsoleOptions } from './console/index.js';
import { buildApp, closeGracefully } from './app.js';
import type { Approvals } from './approvals/ports.js';
import type { createAuthorization } from './authorization/index.js';
import type { McpAuthorizer } from './calls/caller.js';
import type { PersonActionGate } from './calls/pipeline.js';
import type { PersonLogins } from './credentials/person/index.js';
import { createRequestStates, requestStateKey } from './calls/request-states.js';
import { startApprovals } from './composition/approvals.js';
import { startAuthorization } from './composition/authorization.js';
import { startCallArea } from './composition/calls.js';
import { Closers } from './composition/closers.js';
import { startDriftChecks, type DriftReports } from './composition/drift.js';
import { watchServedLock, type ServedLock } from './composition/lock.js';
import { startRecords } from './composition/records.js';
import { readSettings, type GatewaySettings } from './composition/settings.js';
import { openSqliteStorage } from './composition/sqlite/storage.js';
import type { GatewayStorage } from './composition/storage.js';
import type { Vault } from '@gateway/runtime';
import type { DriftWatcher } from './drift/index.js';
import { createOriginGuard } from './mcp/origin.js';
import { sessionState } from './authorization/stores/session-store.js';
import { createTelemetry } from './telemetry/index.js';
import type { LockReloadOutcome, LockWatcher } from './publications/lock-watcher.js';
import { PublicationRegistry } from './publications/registry.js';
import type { ReceiptLog } from './receipts/log.js';
import type { Webhooks } from './webhooks/service.js';

export { DEFAULT_DRIFT_INTERVAL_SECONDS } from './composition/drift.js';

/** How long shutdown waits for in-flight requests before closing their connections. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

export type AuthorizerOverride = McpAuthorizer | ((context: { registry: PublicationRegistry; loaded: LoadedConfig }) => McpAuthorizer);

export interface StartGatewayOptions {
  configPath: string;
  /** Default: tools.lock beside the config. */
  lockPath?: string;
  /** `host:port` (overrides gateway.listen). */
  listen?: string;
  /** Canonical base URL (overrides gateway.url); `/mcp` is served below it. */
  url?: string;
  /** Environment for the vault providers (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** A logger to use (tests pass a silent one); default: pino to stdout with redaction at `logLevel`. */
  logger?: Logger;
  logLevel?: string;
  /** Install SIGTERM/SIGINT handlers that shut down gracefully and exit (the CLI does). */
  handleSignals?: boolean;
  shutdownGraceMs?: number;
  /** Debounce of the lock watcher (ms). */
  lockDebounceMs?: number;
  /**
   * TEST HARNESS ONLY: replaces the authorization area's authorizer. Not reachable from gateway.yaml or
   * any CLI flag — the product has no unauthenticated mode.
   */
  authorizerOverride?: AuthorizerOverride;
  /**
   * TEST HARNESS ONLY: extra sources of "a person must act first" (test/support/person-action-gate.ts). Not
   * reachable from gateway.yaml or any CLI flag; they come after the per-person logins' own gate.
   */
  personActionGates?: readonly PersonActionGate[];
  /** TEST HARNESS ONLY: the webhook delivery lease (default 15 s), shortened by crash tests that restart at once. */
  webhookLeaseMs?: number;
  /**
   * This process is worker `id` of `gateway serve --workers N` (cluster.ts): the database is shared with the
   * other workers, so signing keys must be shared through the vault (drift checks run in whichever process holds
   * the `drift-leader` lease: drift/leader.ts).
   * `startsAlone`: no other worker runs yet (worker 1 at the cluster's start), so it takes over the receipt
   * journals of slots that no worker will use.
   */
  worker?: { id: number; mayRotateSigningKeys: boolean; startsAlone?: boolean };
}

export interface RunningGateway {
  /** The canonical base URL. */
  url: string;
  /** The canonical `/mcp` URL. */
  mcpUrl: string;
  app: FastifyInstance;
  registry: PublicationRegistry;
  /** The drift watcher, when `drift.enabled` is not false. */
  drift: DriftWatcher | undefined;
  /** The receipt log, unless `receipts.enabled: false`. */
  receipts: ReceiptLog | undefined;
  /** Re-reads the lock now (what the file watcher does on a change). */
  reloadLock(): Promise<LockReloadOutcome>;
  /** Graceful shutdown: stop accepting, let in-flight calls finish within the grace period, close the store. */
  close(): Promise<void>;
}

/**
 * The composition root, in the order the areas depend on each other: settings → vault → storage → the verified
 * lock → what executes calls → what records them → authorization → drift → the HTTP app → the lock watcher →
 * listen. Anything that fails stops start-up with an error naming what failed, and closes what was opened.
 */
/**
 * The storage `storage.kind` names: the SQLite file in the data directory, or the PostgreSQL database whose
 * connection string the vault keeps (node-postgres loaded only then).
 */
async function openStorage(
  config: LoadedConfig['config'],
  dataDirectory: string,
  vault: Vault,
  logger: Logger,
  closers: Closers,
): Promise<GatewayStorage> {
  const storage = config.storage;
  if (storage?.kind !== 'postgres') return openSqliteStorage(dataDirectory, logger, closers);
  // No database file creates it: the data directory still holds what stays with this host (the receipt anchor).
  await mkdir(dataDirectory, { recursive: true });
  const { openPostgresStorage } = await import('./composition/postgres/storage.js');
  return openPostgresStorage({ url: storage.url!, poolSize: storage.poolSize }, vault, logger, closers);
}

export async function startGateway(options: StartGatewayOptions): Promise<RunningGateway> {
  const settings = await readSettings(options);
  const { loaded, logger, mcpUrl, listen } = settings;
  const config = loaded.config;
  const registry = new PublicationRegistry();
  // Metrics and traces (docs/observability.md): the hooks and interfaces every area below is given.
  const telemetry = await createTelemetry(loaded, {
    isClusterWorker: options.worker !== undefined,
    warn: (message) => logger.warn(message),
  });
  const closers = new Closers();
  closers.add(() => telemetry.close());
  try {
    const vault = telemetry.observeVault(await createVault(loaded, options.env ? { env: options.env } : {}));
    // Closed after everything opened later (the storage, the areas that still read the vault while closing).
    if (vault.close) closers.add(() => vault.close!());
    const storage = await openStorage(config, settings.dataDirectory, vault, logger, closers);
    // Read once: the bytes verified are the bytes served, and their digest is what the watcher compares against.
    const initial = await loadVerifiedLock(settings.lockPath, loaded);
    registry.replace(initial.lock);
    // One ephemeral state for every area of this process: the database's when processes serve together.
    const ephemeral = storage.ephemeralState({ sharedByWorkers: options.worker !== undefined });
    // Workers, or replicas on PostgreSQL: what one process issues or signs opens on every other (keys from the vault).
    const servesTogether = options.worker !== undefined || storage.kind === 'postgres';
    // What every area starts with; `worker`: this process is one of `gateway serve --workers N`.
    const worker = options.worker ? { worker: options.worker } : {};
    const area = { loaded, vault, storage, ephemeral, logger, registry, servesTogether, ...worker };
    const calls = await startCallArea(area, closers);
    const webhookLeaseMs = options.webhookLeaseMs ? { webhookLeaseMs: options.webhookLeaseMs } : {};
    const records = { ...area, dataDirectory: settings.dataDirectory, deliveryTelemetry: telemetry.deliveries, ...webhookLeaseMs };
    const { receipts, webhooks } = await startRecords(records, closers);
    const fastifyLogger = logger as unknown as FastifyBaseLogger;
    const { authorization, stores: authorizationStores } = await startAuthorization(
      { ...area, logger: fastifyLogger, mcpUrl, personLogins: calls.personLogins },
      closers,
    );
    const override = options.authorizerOverride;
    const authorizer = override ? (typeof override === 'function' ? override({ registry, loaded }) : override) : authorization.authorizer;
    const { drift, reports: driftReports } = await startDriftChecks(
      { loaded, storage, registry, agent: calls.tokenAgent, logger, calls },
      closers,
    );
    const guard = originGuardOf(settings);
    const approvals = startApprovals({
      loaded,
      storage,
      findSession: (id) => authorizationStores.sessions.find(id),
      authorization,
      ...(receipts ? { receipts } : {}),
      closers,
      warn: (message) => logger.warn(message),
    });
    let served: ServedLock | undefined;
    const app = await buildApp({
      loaded,
      mcpUrl,
      authorizer,
      requestStates: createRequestStates(
        await requestStateKey(vault, (message) => logger.warn(message), { requireShared: servesTogether }),
        ephemeral,
      ),
      personActionGates: [...(calls.personLogins ? [calls.personLogins.gate] : []), approvals.gate, ...(options.personActionGates ?? [])],
      authPlugin: approvals.withPages(authorization.plugin),
      adminPlugin: createAdminPlugin({
        vault,
        loaded,
        // Wrong admin tokens are counted like failed sign-ins: across workers when they serve together.
        throttles: authorization.throttles,
        registry,
        guard,
        ...(driftReports ? { drift: driftReports } : {}),
        ...(receipts ? { receipts } : {}),
        ...(webhooks ? { webhooks } : {}),
        lastLockReload: () => served?.lastReload(),
        sessions: authorization.sessions,
        ...(calls.personLogins ? { personLogins: calls.personLogins } : {}),
        mcpRefusals: () => authorization.authorizer.refusals(),
        ...(telemetry.adminMetrics ? { metrics: telemetry.adminMetrics } : {}),
      }),
      telemetry,
      // The console reads the same areas as the admin API; it is there whenever people can sign in.
      ...(authorization.browser.isSignInEnabled
        ? {
            consolePlugin: consolePluginOf(
              authorization.browser,
              consoleAreas(registry, authorization, {
                driftReports,
                receipts,
                webhooks,
                approvals: approvals.approvals,
                personLogins: calls.personLogins,
              }),
            ),
          }
        : {}),
      guard,
      registry,
      executor: calls.executor,
      ...(receipts ? { receipts } : {}),
      logger: fastifyLogger,
      ...(settings.https ? { https: settings.https } : {}),
      isLoopbackListener: settings.isLoopbackListener,
      listenPort: listen.port,
    });
    served = watchServedLock(
      {
        lockPath: settings.lockPath,
        loaded,
        registry,
        logger,
        initialDigest: initial.digest,
        ...(options.lockDebounceMs === undefined ? {} : { debounceMs: options.lockDebounceMs }),
        ...(drift?.prepareFor ? { prepareFor: (lock: Lockfile) => drift.prepareFor!(lock) } : {}),
        changes: storage.changeFeed(),
      },
      closers,
    );
    watchForMetrics(telemetry, { registry, receipts, webhooks, authorization });
    // Before the gateway's own listener: a metrics address in use stops the start with nothing left listening.
    await telemetry.listen();
    await listenOn(app, listen);
    webhooks?.start();
    logger.info(
      {
        mcpUrl,
        listen: `${listen.host}:${listen.port}`,
        tls: Boolean(settings.https),
        tools: registry.snapshot().names.length,
        ...(options.worker ? { worker: options.worker.id, pid: process.pid } : {}),
      },
      'gateway listening',
    );
    const watcher = served.watcher;
    const close = closeOnce(app, watcher, closers, logger, options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS);
    if (options.handleSignals) closeOnSignals(close, logger);
    return {
      url: config.gateway.url.replace(/\/+$/, ''),
      mcpUrl,
      app,
      registry,
      drift,
      receipts,
      reloadLock: () => watcher.reload(),
      close,
    };
  } catch (error) {
    await closers.closeAll();
    throw error;
  }
}

/** One Host/Origin policy for /mcp and the admin API (DNS-rebinding protection). */
function originGuardOf(settings: GatewaySettings) {
  return createOriginGuard({
    mcpUrl: settings.mcpUrl,
    isLoopbackListener: settings.isLoopbackListener,
    listenPort: settings.listen.port,
    allowedOrigins: settings.loaded.config.gateway.allowedOrigins ?? [],
  });
}

/** What the console shows: the same areas as the admin API. */
function consoleAreas(
  registry: PublicationRegistry,
  authorization: Awaited<ReturnType<typeof createAuthorization>>,
  areas: {
    driftReports: DriftReports | undefined;
    receipts: ReceiptLog | undefined;
    webhooks: Webhooks | undefined;
    approvals: Approvals;
    personLogins: PersonLogins | undefined;
  },
): ConsoleOptions['areas'] {
  return {
    registry,
    approvals: areas.approvals,
    ...(areas.personLogins ? { personLogins: areas.personLogins } : {}),
    ...(areas.driftReports ? { drift: areas.driftReports } : {}),
    ...(areas.receipts ? { receipts: areas.receipts } : {}),
    ...(areas.webhooks ? { webhooks: areas.webhooks } : {}),
    sessions: authorization.sessions,
  };
}

/** What the metrics read at scrape time: receipts waiting, checkpoint age, outbox state, drift, open sessions. */
function watchForMetrics(
  telemetry: Awaited<ReturnType<typeof createTelemetry>>,
  areas: {
    registry: PublicationRegistry;
    receipts: ReceiptLog | undefined;
    webhooks: Webhooks | undefined;
    authorization: Awaited<ReturnType<typeof createAuthorization>>;
  },
): void {
  const { registry, receipts, webhooks, authorization } = areas;
  telemetry.watch({
    registry,
    ...(receipts ? { receipts } : {}),
    ...(webhooks ? { webhooks } : {}),
    openSessions: async () => (await authorization.sessions.listSessions()).filter((session) => sessionState(session) === 'open').length,
    mcpRefusals: () => authorization.authorizer.refusals(),
  });
}

async function listenOn(app: FastifyInstance, listen: { host: string; port: number }): Promise<void> {
  try {
    await app.listen({ host: listen.host, port: listen.port });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const problem = listenAddressProblem(code);
    if (problem) {
      const address = listenAddressText(listen);
      throw new GatewayError('LISTEN_ADDRESS_UNAVAILABLE', `cannot listen on ${address}: ${problem}; ${LISTEN_ADDRESS_FIX}`, {
        details: { address, reason: code },
      });
    }
    throw error;
  }
}

/** Graceful shutdown, once: stop accepting, let requests in flight finish up to the grace period, then close the rest. */
function closeOnce(app: FastifyInstance, watcher: LockWatcher, closers: Closers, logger: Logger, graceMs: number): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= (async () => {
      watcher.close();
      // Requests in flight finish, up to the grace period, then their sockets are cut.
      await closeGracefully(app, graceMs).catch((error: Error) => logger.error({ error: error.message }, 'error while closing'));
      await closers.closeAll();
      logger.info('gateway stopped');
    })();
    return closing;
  };
}

function closeOnSignals(close: () => Promise<void>, logger: Logger): void {
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info({ signal }, 'shutting down');
    void close().then(() => process.exit(0));
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
}
