/**
 * The admin API, read by `gateway status`: routes under `/admin/`, protected by a bearer token that lives
 * in the vault (`admin.tokenSecret`, default `admin-token`). The token is read from the vault on every
 * request, so `gateway secrets rotate admin-token` takes effect without a restart.
 * Errors are RFC 9457 problem details (`application/problem+json`).
 */
import { secretsEqual } from '@gateway/runtime';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { isGatewayError, type LoadedConfig } from '@gateway/core';
import type { DriftSourceReport } from '../drift/watcher.js';
import type { OriginGuard } from '../mcp/origin.js';
import type { ReceiptLog } from '../receipts/log.js';
import { registerReceiptRoutes } from '../receipts/admin-routes.js';
import { registerWebhookRoutes } from '../webhooks/admin-routes.js';
import type { Webhooks } from '../webhooks/service.js';
import type { SqliteDatabase } from '../store/database.js';
import type { Vault } from '@gateway/runtime';

/** The part of the publication registry the admin API reads (publications/registry.ts). */
export interface AdminRegistry {
  readonly isReady: boolean;
  snapshot(): {
    readonly tools: ReadonlyMap<string, { sourceName: string }>;
    readonly publications: ReadonlyMap<string, string>;
  };
  blockedReason(sourceName: string, toolName: string): string | undefined;
}

export interface AdminPluginOptions {
  vault: Vault;
  loaded: LoadedConfig;
  /** Not read yet; kept so later admin routes (proposals, receipts) need no new wiring. */
  database?: SqliteDatabase;
  registry: AdminRegistry;
  /**
   * The same Host/Origin check as /mcp (mcp/origin.ts): a page whose name was rebound to this gateway's
   * address must not reach the admin API either, even though it would still need the token.
   */
  guard: OriginGuard;
  /** The drift watcher; absent when drift checks are disabled. */
  drift?: { report(): DriftSourceReport[]; checkNow?(sources?: readonly string[]): Promise<void> };
  /** The receipt log (`/admin/receipts…`); absent when receipts are disabled. */
  receipts?: ReceiptLog;
  /** Webhook delivery (`/admin/webhooks…`); absent when no endpoint is configured. */
  webhooks?: Webhooks;
  /** The last reload of tools.lock that did not leave the served lock as it was (a swap or a refusal). */
  lastLockReload?: () => LockReloadStatus | undefined;
}

/** What `gateway status` shows of hot reloads: a refused lock keeps the last good one serving, and says why. */
export interface LockReloadStatus {
  status: 'swapped' | 'refused' | 'missing';
  at: string;
  code?: string;
  message?: string;
}

/** `GET /admin/status`. */
export interface AdminStatus {
  ready: boolean;
  publications: Array<{ source: string; id: string; toolCount: number; blockedCount: number }>;
  drift: DriftSourceReport[];
  /** The last hot reload of tools.lock that changed something or was refused; absent before the first. */
  lockReload?: LockReloadStatus;
}

interface Problem {
  status: number;
  code: string;
  title: string;
  detail: string;
}

function sendProblem(reply: FastifyReply, problem: Problem): FastifyReply {
  if (problem.status === 401) reply.header('www-authenticate', 'Bearer realm="gateway-admin"');
  return reply
    .code(problem.status)
    .header('content-type', 'application/problem+json; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(
      JSON.stringify({
        type: `https://gateway.dev/problems/${problem.code.toLowerCase().replace(/_/g, '-')}`,
        title: problem.title,
        status: problem.status,
        detail: problem.detail,
        code: problem.code,
      }),
    );
}

export function createAdminPlugin(options: AdminPluginOptions): FastifyPluginAsync {
  const tokenSecret = options.loaded.config.admin?.tokenSecret ?? 'admin-token';

  const routes: FastifyPluginAsync = async (app) => {
    app.addHook('onRequest', async (request, reply) => {
      const hostProblem = options.guard.checkHost(request.headers.host) ?? options.guard.checkOrigin(request.headers.origin);
      if (hostProblem) {
        return sendProblem(reply, { status: 403, code: 'ADMIN_HOST_REFUSED', title: 'Wrong host or origin', detail: hostProblem });
      }
      let expected: string | undefined;
      try {
        expected = await options.vault.get(tokenSecret);
      } catch (error) {
        request.log.error({ code: isGatewayError(error) ? error.code : undefined }, 'admin token could not be read from the vault');
        return sendProblem(reply, {
          status: 503,
          code: 'ADMIN_TOKEN_UNAVAILABLE',
          title: 'Admin token unavailable',
          detail: `the admin token '${tokenSecret}' could not be read from the vault; see the server log`,
        });
      }
      if (!expected) {
        return sendProblem(reply, {
          status: 401,
          code: 'ADMIN_TOKEN_NOT_CONFIGURED',
          title: 'Admin API disabled',
          detail: `no admin token is configured: store one with \`gateway secrets set ${tokenSecret}\``,
        });
      }
      const header = request.headers.authorization ?? '';
      // RFC 6750 §2.1: `Bearer` followed by the token; the scheme name is case-insensitive (RFC 9110 §11.1).
      const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
      if (!match || !secretsEqual(match[1]!, expected)) {
        return sendProblem(reply, {
          status: 401,
          code: 'ADMIN_TOKEN_INVALID',
          title: 'Admin token required',
          detail: 'send the admin token as `Authorization: Bearer <token>`',
        });
      }
    });

    app.get('/status', async (_request, reply): Promise<AdminStatus> => {
      const snapshot = options.registry.snapshot();
      const counts = new Map<string, { toolCount: number; blockedCount: number }>();
      for (const [name, tool] of snapshot.tools) {
        const count = counts.get(tool.sourceName) ?? { toolCount: 0, blockedCount: 0 };
        count.toolCount += 1;
        if (options.registry.blockedReason(tool.sourceName, name) !== undefined) count.blockedCount += 1;
        counts.set(tool.sourceName, count);
      }
      const publications = [...snapshot.publications]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([source, id]) => ({ source, id, ...(counts.get(source) ?? { toolCount: 0, blockedCount: 0 }) }));
      reply.header('cache-control', 'no-store');
      const lockReload = options.lastLockReload?.();
      return { ready: options.registry.isReady, publications, drift: options.drift?.report() ?? [], ...(lockReload ? { lockReload } : {}) };
    });

    // The push trigger for a deployment pipeline: re-read the description(s) now instead of at the next
    // interval, so a changed operation stops being callable as soon as the new API version is deployed.
    app.post<{ Body: { source?: unknown } | undefined }>('/drift/check', async (request, reply) => {
      const drift = options.drift;
      if (!drift?.checkNow) {
        return sendProblem(reply, { status: 409, code: 'DRIFT_DISABLED', title: 'Drift checks are off', detail: 'drift.enabled is false in gateway.yaml' });
      }
      const source = request.body?.source;
      if (source !== undefined && (typeof source !== 'string' || !Object.hasOwn(options.loaded.config.sources, source))) {
        return sendProblem(reply, { status: 404, code: 'SOURCE_UNKNOWN', title: 'Unknown source', detail: `no source ${JSON.stringify(source)} in gateway.yaml` });
      }
      await drift.checkNow(source === undefined ? undefined : [source]);
      reply.header('cache-control', 'no-store');
      return { drift: drift.report().filter((entry) => source === undefined || entry.source === source) };
    });

    if (options.receipts) registerReceiptRoutes(app, options.receipts, sendProblem);
    if (options.webhooks) registerWebhookRoutes(app, options.webhooks, sendProblem);

    app.setNotFoundHandler((request, reply) =>
      sendProblem(reply, { status: 404, code: 'ADMIN_ROUTE_NOT_FOUND', title: 'Not found', detail: `no admin route ${request.method} ${request.url}` }),
    );

    app.setErrorHandler((error, request, reply) => {
      request.log.error({ code: isGatewayError(error) ? error.code : undefined, error: (error as Error).message }, 'admin request failed');
      return sendProblem(reply, {
        status: 500,
        code: isGatewayError(error) ? error.code : 'INTERNAL_ERROR',
        title: 'Admin request failed',
        detail: isGatewayError(error) ? error.message : 'an unexpected error; see the server log',
      });
    });
  };

  // Encapsulated under /admin: the hook, 404 and error handlers touch no other area's routes.
  return async (app) => {
    await app.register(routes, { prefix: '/admin' });
  };
}
