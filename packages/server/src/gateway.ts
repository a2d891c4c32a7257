import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Dispatcher } from 'undici';
import {
  canonicalMcpUrl,
  describeToolChanges,
  GatewayError,
  isLoopbackHostname,
  loadConfig,
  loadVerifiedLock,
  verifiedLockFrom,
  resolveConfigPath,
  type LoadedConfig,
  type LockReloadStatus,
} from '@gateway/core';
import { createAdminPlugin } from './admin/index.js';
import { createOriginGuard } from './mcp/origin.js';
import { buildApp, closeGracefully } from './app.js';
import type { PersonActionGate } from './calls/pipeline.js';
import { createRequestStates, requestStateKey } from './calls/request-states.js';
import { authorizationMigrations, createAuthorization, type ConsentTool } from './authorization/index.js';
import { createCredentialResolver, listLogins, operationLogins } from './credentials/index.js';
import { driftMigrations, followDrift, startDriftWatcher, type DriftWatcher } from './drift/index.js';
import { createExecutor, sourceLimits } from './execute/executor.js';
import { McpUpstreamPool } from './execute/mcp-upstream.js';
import { startMcpDriftMonitor, type McpDriftMonitor } from './drift/mcp-monitor.js';
import { createGatewayLogger } from './logger.js';
import type { McpAuthorizer } from './calls/caller.js';
import {
  createGuardedAgent,
  defaultListen,
  LISTEN_ADDRESS_FIX,
  listenAddressProblem,
  listenAddressText,
  parseListen,
} from '@gateway/runtime';
import { watchLock, type LockReloadOutcome, type LockWatcher } from './publications/lock-watcher.js';
import { PublicationRegistry } from './publications/registry.js';
import { startBackgroundCheckpointer } from './store/sqlite/checkpointer.js';
import { openDatabase, type Migration } from './store/sqlite/database.js';
import { claimJournals } from './receipts/journal.js';
import { createReceiptLog, type ReceiptLog } from './receipts/log.js';
import { receiptMigrations } from './receipts/migrations.js';
import { createSqliteReceiptStore } from './receipts/store.js';
import { outboxMigrations } from './outbox/migrations.js';
import { createWebhooks, type Webhooks } from './webhooks/service.js';
import { createVault } from '@gateway/runtime';
import { sessionState } from './authorization/stores/session-store.js';
import { createTelemetry } from './telemetry/index.js';

/** Default listen address: loopback only, so a fresh install is never reachable from the network. */
/** How long shutdown waits for in-flight requests before closing their connections. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
/**
 * Time between drift rounds. Conditional requests (ETag / If-Modified-Since) make an unchanged URL document a
 * 304 without a body, and an unchanged file is not normalised again, so polling every minute is cheap; the
 * push trigger (`gateway drift check`) closes the window entirely for owners who deploy the API.
 */
export const DEFAULT_DRIFT_INTERVAL_SECONDS = 60;

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
   * reachable from gateway.yaml or any CLI flag; production has none until OAuth per person and approvals.
   */
  personActionGates?: readonly PersonActionGate[];
  /** TEST HARNESS ONLY: the webhook delivery lease (default 15 s), shortened by crash tests that restart at once. */
  webhookLeaseMs?: number;
  /**
   * This process is worker `id` of `gateway serve --workers N` (cluster.ts): the database is shared with the
   * other workers, so signing keys must be shared through the vault, and only the worker with
   * `checksDrift` fetches descriptions; the others follow the drift state it records (drift/follower.ts).
   * `startsAlone`: no other worker runs yet (worker 1 at the cluster's start), so it takes over the receipt
   * journals of slots that no worker will use.
   */
  worker?: { id: number; checksDrift: boolean; mayRotateSigningKeys: boolean; startsAlone?: boolean };
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

function withUrl(loaded: LoadedConfig, url: string | undefined): LoadedConfig {
  if (!url) return loaded;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new GatewayError('GATEWAY_URL_INVALID', `--url is not an absolute URL: ${url}`);
  }
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && isLoopbackHostname(parsed.hostname))) {
    throw new GatewayError('GATEWAY_URL_INVALID', `--url must be https (plain http only for loopback hosts): ${url}`);
  }
  return { ...loaded, config: { ...loaded.config, gateway: { ...loaded.config.gateway, url: url.replace(/\/+$/, '') } } };
}

/**
 * The composition root: config → vault → database → verified lock → executor → authorization → app →
 * listen. Anything that fails stops start-up with an error naming what failed.
 */
export async function startGateway(options: StartGatewayOptions): Promise<RunningGateway> {
  const configPath = resolve(options.configPath);
  const lockPath = options.lockPath ? resolve(options.lockPath) : join(dirname(configPath), 'tools.lock');
  const loaded = withUrl(await loadConfig(configPath), options.url);
  const config = loaded.config;
  const listen = parseListen(options.listen ?? config.gateway.listen ?? defaultListen(config.gateway.url));
  const isLoopbackListener = isLoopbackHostname(listen.host);

  // Plain HTTP carries bearer tokens in the clear: only on loopback (MCP Authorization › Communication Security).
  let https: { cert: Buffer; key: Buffer } | undefined;
  if (config.gateway.tls) {
    try {
      https = {
        cert: await readFile(resolveConfigPath(loaded, config.gateway.tls.cert)),
        key: await readFile(resolveConfigPath(loaded, config.gateway.tls.key)),
      };
    } catch (error) {
      throw new GatewayError('TLS_FILES_UNREADABLE', `cannot read gateway.tls cert/key: ${(error as Error).message}`);
    }
  } else if (!isLoopbackListener) {
    throw new GatewayError(
      'LISTEN_INSECURE_REFUSED',
      `refusing to serve plain HTTP on ${listen.host}: set gateway.tls (cert and key) or listen on a loopback address such as 127.0.0.1`,
    );
  }

  const logger = options.logger ?? createGatewayLogger({ level: options.logLevel });
  // Clients reach a gateway.url that is not this loopback listener: a reverse proxy stands between. Unless it is
  // listed, every request comes from its address, and all people share one per-address allowance.
  const isBehindProxy = isLoopbackListener && !https && !isLoopbackHostname(new URL(config.gateway.url).hostname);
  if (isBehindProxy && (config.gateway.trustedProxies ?? []).length === 0) {
    logger.warn(
      { url: config.gateway.url, listen: `${listen.host}:${listen.port}` },
      'gateway.url is reached through a reverse proxy, which gateway.trustedProxies does not list: every client is counted ' +
        "under the proxy's address by the sign-in, /authorize and registration limits (docs/config.md)",
    );
  }

  const mcpUrl = canonicalMcpUrl(config);
  const registry = new PublicationRegistry();
  const dataDirectory = resolveConfigPath(loaded, config.gateway.dataDirectory ?? '.gateway');

  // Metrics and traces (docs/observability.md): the hooks and interfaces every area below is given.
  const telemetry = await createTelemetry(loaded, {
    isClusterWorker: options.worker !== undefined,
    warn: (message) => logger.warn(message),
  });
  const vault = telemetry.observeVault(await createVault(loaded, options.env ? { env: options.env } : {}));
  const migrations: Migration[] = [...driftMigrations, ...authorizationMigrations, ...receiptMigrations, ...outboxMigrations];
  const databasePath = join(dataDirectory, 'gateway.db');
  const database = openDatabase(databasePath, migrations);
  // WAL checkpoints (the only fsyncs under synchronous = NORMAL) run on a thread of their own, not inside a
  // tool call's receipt commit (docs/receipts.md#cost-per-call).
  const checkpointer = startBackgroundCheckpointer(database, databasePath, (message) => logger.warn(message));
  const cleanups: Array<() => Promise<void> | void> = [
    () => {
      database.close();
    },
    () => checkpointer.stop(),
    () => telemetry.close(),
  ];
  const cleanUp = async () => {
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  };

  try {
    // Read once: the bytes verified are the bytes served, and their digest is what the watcher compares against.
    const initial = await loadVerifiedLock(lockPath, loaded);
    registry.replace(initial.lock);

    const agents = new Map<string, Dispatcher>();
    const allowPrivateNetworks = config.network?.allowPrivateNetworks ?? [];
    const dispatcherFor = (sourceName: string): Dispatcher => {
      let agent = agents.get(sourceName);
      if (!agent) {
        agent = createGuardedAgent({ allowPrivateNetworks, connectTimeoutMs: sourceLimits(loaded, sourceName).connectMs });
        agents.set(sourceName, agent);
      }
      return agent;
    };
    const tokenAgent = createGuardedAgent({ allowPrivateNetworks });
    cleanups.push(async () => {
      await Promise.all([...agents.values(), tokenAgent].map((agent) => agent.close().catch(() => undefined)));
    });

    const credentials = createCredentialResolver({ loaded, vault, fetchDispatcher: tokenAgent });
    // MCP sources: each upstream is started or connected on its first call (docs/sources-mcp.md).
    const hasMcpSources = Object.values(config.sources).some((source) => source.kind === 'mcp');
    // The rug-pull defence is wired below, once the database and registry exist; the pool reports to it.
    let onMcpToolsChanged: (sourceName: string) => void = () => undefined;
    const mcpUpstreams = hasMcpSources
      ? new McpUpstreamPool({
          loaded,
          vault,
          agent: createGuardedAgent({ allowPrivateNetworks }),
          logger,
          onToolListChanged: (sourceName) => onMcpToolsChanged(sourceName),
        })
      : undefined;
    if (mcpUpstreams) cleanups.push(() => mcpUpstreams.close());
    const executor = createExecutor({
      credentials,
      dispatcherFor,
      limitsFor: (sourceName) => sourceLimits(loaded, sourceName),
      ...(mcpUpstreams ? { mcpUpstreams } : {}),
    });

    const fastifyLogger = logger as unknown as FastifyBaseLogger;
    // Webhooks (docs/webhooks.md): the outbox is a receipt hook, so a receipt and its events commit together.
    let webhooks: Webhooks | undefined;
    if (Object.keys(config.webhooks ?? {}).length > 0) {
      if (config.receipts?.enabled === false) {
        throw new GatewayError(
          'WEBHOOKS_REQUIRE_RECEIPTS',
          'webhooks report receipts: remove `receipts.enabled: false` or the `webhooks` section',
        );
      }
      const webhookAgent = createGuardedAgent({ allowPrivateNetworks });
      cleanups.push(() => webhookAgent.close());
      webhooks = await createWebhooks({
        loaded,
        database,
        vault,
        agent: webhookAgent,
        logger,
        ...(options.webhookLeaseMs ? { leaseMs: options.webhookLeaseMs } : {}),
        telemetry: telemetry.deliveries,
      });
    }
    // Receipts (docs/receipts.md): keys from the vault, created on first start; a final checkpoint at close. Each
    // process journals its receipts in a slot of its own; the log first moves what an earlier process of the
    // slot left there (with the outbox hook, so those receipts get their events too).
    let receiptLog: ReceiptLog | undefined;
    if (config.receipts?.enabled !== false) {
      // `receipts.journal: false`: no journal (each call waits for its receipt's commit). The process that starts
      // first (alone, or worker 1 before the others) also takes over the journals of slots nobody serves from now.
      const claimed = claimJournals({
        directory: dataDirectory,
        slot: options.worker ? `worker-${options.worker.id}` : 'main',
        usesJournal: config.receipts?.journal !== false,
        adoptsOthers: !options.worker || options.worker.startsAlone === true,
        warn: (message) => logger.warn(message),
      });
      try {
        receiptLog = await createReceiptLog({
          store: createSqliteReceiptStore(database),
          vault,
          loaded,
          dataDirectory,
          requiresSharedSigningKey: options.worker !== undefined,
          ...(claimed.journal ? { journal: claimed.journal } : {}),
          adopt: claimed.adopt,
          ...(webhooks ? { hooks: [webhooks.outbox] } : {}),
          warn: (message) => logger.warn(message),
          alert: (details, message) => logger.error(details, message),
        });
      } catch (error) {
        claimed.release();
        throw error;
      }
      const log = receiptLog;
      cleanups.push(async () => {
        log.close();
        // The vault's copy of the final checkpoint (the data directory's file is written already).
        await log.anchor.settled();
      });
    }
    // Registered after the receipt log's cleanup, so it runs before it: delivery stops, then the log closes.
    const stoppingWebhooks = webhooks;
    if (stoppingWebhooks) cleanups.push(() => stoppingWebhooks.stop());
    const authorization = await createAuthorization({
      loaded,
      database,
      vault,
      logger: fastifyLogger,
      mcpUrl,
      listTools: () => consentTools(registry, loaded),
      listLogins: () => listLogins(loaded),
      changesSince: (toolName, approvedFingerprint) => changesSince(registry, toolName, approvedFingerprint),
      ...(options.worker
        ? { requireSharedSigningKeys: true, ...(options.worker.mayRotateSigningKeys ? {} : { rotateSigningKeys: false }) }
        : {}),
    });
    cleanups.push(() => authorization.close());
    const override = options.authorizerOverride;
    const authorizer = override ? (typeof override === 'function' ? override({ registry, loaded }) : override) : authorization.authorizer;

    // Drift: re-read each live description and block changed operations (docs/drift.md).
    let drift: DriftWatcher | undefined;
    let lastLockReload: LockReloadStatus | undefined;
    if (config.drift?.enabled !== false && options.worker && !options.worker.checksDrift) {
      const following = followDrift({ loaded, database, registry });
      drift = following;
      cleanups.push(() => following.stop());
    } else if (config.drift?.enabled !== false) {
      drift = startDriftWatcher({
        loaded,
        database,
        registry,
        agent: tokenAgent,
        logger,
        intervalMs: Math.round((config.drift?.intervalSeconds ?? DEFAULT_DRIFT_INTERVAL_SECONDS) * 1000),
      });
      const started = drift;
      cleanups.push(() => started.stop());
    }

    // One Host/Origin policy for /mcp and the admin API (DNS-rebinding protection).
    const guard = createOriginGuard({
      mcpUrl,
      isLoopbackListener,
      listenPort: listen.port,
      allowedOrigins: config.gateway.allowedOrigins ?? [],
    });
    // MCP sources: re-list on the upstream's list_changed and periodically while connected (docs/sources-mcp.md).
    let mcpDrift: McpDriftMonitor | undefined;
    if (mcpUpstreams) {
      const monitor = startMcpDriftMonitor({
        loaded,
        database,
        registry,
        pool: mcpUpstreams,
        logger,
        intervalMs: Math.round((config.drift?.intervalSeconds ?? DEFAULT_DRIFT_INTERVAL_SECONDS) * 1000),
      });
      mcpDrift = monitor;
      onMcpToolsChanged = (sourceName) => void monitor.check(sourceName);
      cleanups.push(() => monitor.stop());
    }
    // What the admin API shows and re-checks on push (`gateway drift check`): OpenAPI and MCP sources alike.
    const driftReports =
      drift || mcpDrift
        ? {
            report: () => [...(drift?.report() ?? []), ...(mcpDrift?.report() ?? [])],
            checkNow: async (sources?: readonly string[]) => {
              await drift?.checkNow(sources);
              const mcpSources = sources ?? Object.keys(config.sources).filter((name) => config.sources[name]!.kind === 'mcp');
              for (const name of mcpSources) await mcpDrift?.check(name);
            },
          }
        : undefined;

    const sessionStore = authorization.sessions;
    telemetry.watch({
      registry,
      ...(receiptLog ? { receipts: receiptLog } : {}),
      ...(webhooks ? { webhooks } : {}),
      openSessions: async () => (await sessionStore.listSessions()).filter((session) => sessionState(session) === 'open').length,
      mcpRefusals: () => authorization.authorizer.refusals(),
    });
    const app = await buildApp({
      loaded,
      mcpUrl,
      authorizer,
      requestStates: createRequestStates(await requestStateKey(vault, (message) => logger.warn(message))),
      ...(options.personActionGates ? { personActionGates: options.personActionGates } : {}),
      authPlugin: authorization.plugin,
      adminPlugin: createAdminPlugin({
        vault,
        loaded,
        database,
        // Wrong admin tokens are counted like failed sign-ins: across workers when they serve together.
        throttleStore: authorization.throttleStore('admin-token'),
        registry,
        guard,
        ...(driftReports ? { drift: driftReports } : {}),
        ...(receiptLog ? { receipts: receiptLog } : {}),
        ...(webhooks ? { webhooks } : {}),
        lastLockReload: () => lastLockReload,
        sessions: authorization.sessions,
        mcpRefusals: () => authorization.authorizer.refusals(),
        ...(telemetry.adminMetrics ? { metrics: telemetry.adminMetrics } : {}),
      }),
      telemetry,
      guard,
      registry,
      executor,
      ...(receiptLog ? { receipts: receiptLog } : {}),
      logger: fastifyLogger,
      ...(https ? { https } : {}),
      isLoopbackListener,
      listenPort: listen.port,
    });

    const watcher: LockWatcher = watchLock({
      lockPath,
      registry,
      onReload: (outcome) => {
        if (outcome.status === 'unchanged') return;
        const at = new Date().toISOString();
        lastLockReload =
          outcome.status === 'refused'
            ? { status: 'refused', at, code: outcome.code, message: outcome.message }
            : { status: outcome.status, at };
      },
      load: async (bytes) => {
        const { lock } = await verifiedLockFrom(bytes, lockPath, loaded);
        // Before the swap: the drift verdict on a new publication compares it with each description as it is now,
        // not as the last interval check read it (a description changed, imported and published within one).
        await drift?.prepareFor?.(lock);
        return lock;
      },
      logger,
      ...(options.lockDebounceMs === undefined ? {} : { debounceMs: options.lockDebounceMs }),
      initialDigest: initial.digest,
    });
    cleanups.push(() => watcher.close());

    // Before the gateway's own listener: a metrics address in use stops the start with nothing left listening.
    await telemetry.listen();
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
    webhooks?.start();
    logger.info(
      {
        mcpUrl,
        listen: `${listen.host}:${listen.port}`,
        tls: Boolean(https),
        tools: registry.snapshot().names.length,
        ...(options.worker ? { worker: options.worker.id, pid: process.pid } : {}),
      },
      'gateway listening',
    );

    const graceMs = options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
    let closing: Promise<void> | undefined;
    const close = (): Promise<void> => {
      closing ??= (async () => {
        watcher.close();
        // Stop accepting; requests in flight finish, up to the grace period, then their sockets are cut.
        await closeGracefully(app, graceMs).catch((error: Error) => logger.error({ error: error.message }, 'error while closing'));
        await cleanUp();
        logger.info('gateway stopped');
      })();
      return closing;
    };

    if (options.handleSignals) {
      const onSignal = (signal: NodeJS.Signals) => {
        logger.info({ signal }, 'shutting down');
        void close().then(() => process.exit(0));
      };
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
    }

    return {
      url: config.gateway.url.replace(/\/+$/, ''),
      mcpUrl,
      app,
      registry,
      drift,
      receipts: receiptLog,
      reloadLock: () => watcher.reload(),
      close,
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}

/**
 * The tools of the in-use publications, as the consent page shows them: a tool blocked by drift is listed too, with
 * its reason, and cannot be chosen (never silently left out).
 */
function consentTools(registry: PublicationRegistry, loaded: LoadedConfig): ConsentTool[] {
  const snapshot = registry.snapshot();
  const tools: ConsentTool[] = [];
  for (const name of snapshot.names) {
    const tool = snapshot.tools.get(name)!;
    const blocked = registry.blockedReason(tool.sourceName, name);
    tools.push({
      ...(blocked === undefined ? {} : { blocked }),
      name,
      title: tool.entry.title,
      description: tool.entry.description,
      source: tool.sourceName,
      readOnly: tool.annotations.readOnlyHint,
      destructive: tool.annotations.destructiveHint === true,
      fingerprint: tool.entry.fingerprint,
      target:
        tool.kind === 'openapi'
          ? { kind: 'http', method: tool.operation.method, path: tool.operation.path }
          : { kind: 'mcp', server: tool.sourceName, tool: tool.mcpTool.name },
      logins: tool.kind === 'openapi' ? operationLogins(loaded, tool.sourceName, tool.operation) : [],
    });
  }
  return tools;
}

/** What changed in a tool since the approved version, in the words of `gateway diff` (core's describeToolChanges). */
function changesSince(registry: PublicationRegistry, toolName: string, approvedFingerprint: string): string[] | undefined {
  const current = registry.snapshot().tools.get(toolName);
  const approved = registry.servedEntry(toolName, approvedFingerprint);
  if (!current || !approved) return undefined;
  return describeToolChanges(approved, current.entry).map((change) => change.message);
}
