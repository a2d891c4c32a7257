/**
 * The admin API, read by `gateway status` and `gateway sessions`: routes under `/admin/`, protected by a bearer token that lives
 * in the vault (`admin.tokenSecret`, default `admin-token`). The token is read from the vault on every
 * request, so `gateway secrets rotate admin-token` takes effect without a restart.
 * Errors are RFC 9457 problem details (`application/problem+json`).
 */
import { addressBucket, secretsEqual } from '@gateway/runtime';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import {
  compareText,
  findSource,
  inUsePublication,
  isGatewayError,
  type AdminSession,
  type AdminSessionAnswer,
  type AdminSessionList,
  type AdminDriftCheck,
  type AdminStatus,
  type DriftSourceReport,
  type ErrorCode,
  type LoadedConfig,
  type Lockfile,
  type LockReloadStatus,
} from '@gateway/core';
import { sessionState, type SessionRecord, type SessionStore } from '../authorization/stores/session-store.js';
import { AttemptThrottle, type ThrottleStore } from '../authorization/oauth/rate-limit.js';
import { exceedsJsonDepth } from '../mcp/json-depth.js';
import type { OriginGuard } from '../mcp/origin.js';
import type { ReceiptLog } from '../receipts/log.js';
import { registerReceiptRoutes } from '../receipts/admin-routes.js';
import { registerWebhookRoutes, webhookSummaries } from '../webhooks/admin-routes.js';
import type { Webhooks } from '../webhooks/service.js';
import { markStaleTools } from '../authorization/consent/reapproval.js';
import { BUSY_RETRY_AFTER_SECONDS, databaseBusyError, isDatabaseBusy, type SqliteDatabase } from '../store/sqlite/database.js';
import type { Vault } from '@gateway/runtime';

/** The part of the publication registry the admin API reads (publications/registry.ts). */
export interface AdminRegistry {
  readonly isReady: boolean;
  snapshot(): {
    readonly tools: ReadonlyMap<string, { sourceName: string; entry: { fingerprint: string } }>;
    readonly publications: ReadonlyMap<string, string>;
    /** The verified lock served (what the in-use publications do not offer is read from it). */
    readonly lock?: Lockfile | null;
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
  /**
   * The authorization area's session store (the same instance, so a revocation here also clears the /mcp
   * authorizer's cache at once); absent when the gateway runs without its authorization server.
   */
  sessions?: SessionStore;
  /** Where wrong admin tokens are counted (default: this process's memory; the database with workers). */
  throttleStore?: ThrottleStore;
  /** Refused `/mcp` requests by reason, counted by this process's authorizer (`AdminStatus.mcpRefusals`). */
  mcpRefusals?: () => Record<string, number>;
  /** Serves `GET /metrics` behind the admin token: the Prometheus exposition text (telemetry/). */
  metrics?: () => Promise<{ contentType: string; text: string }>;
}

/** Wrong admin tokens from one client address before it must wait, and how long the count lasts. */
export const ADMIN_TOKEN_MAX_FAILURES = 20;
export const ADMIN_TOKEN_LOCKOUT_SECONDS = 900;

/**
 * The wire view of a session (core's admin-api.ts): ISO times, the state computed at `now`, and each tool
 * marked stale when the in-use publication no longer offers the fingerprint the person approved
 * (docs/authorization.md › Re-approval).
 */
function sessionView(session: SessionRecord, published: ReadonlyMap<string, string>, now = Date.now()): AdminSession {
  return {
    id: session.id,
    state: sessionState(session, now),
    person: session.personName,
    subject: session.subject,
    client: session.clientName,
    clientId: session.clientId,
    tools: markStaleTools(session.tools, published),
    logins: session.logins,
    createdAt: new Date(session.createdAt).toISOString(),
    expiresAt: new Date(session.expiresAt).toISOString(),
    ...(session.revokedAt !== null ? { revokedAt: new Date(session.revokedAt).toISOString(), revokedReason: session.revokedReason } : {}),
    ...(session.reapprovalRequestedAt !== null
      ? { reapprovalRequestedAt: new Date(session.reapprovalRequestedAt).toISOString(), reapprovalTools: session.reapprovalTools }
      : {}),
  };
}

interface Problem {
  status: number;
  code: ErrorCode;
  title: string;
  detail: string;
}

/** How deeply an admin request's JSON body may nest (its bodies are flat objects). */
const ADMIN_BODY_MAX_DEPTH = 32;

/** An error the admin error handler answers as the client's (400) rather than the server's. */
function clientError(message: string): Error & { statusCode: number } {
  return Object.assign(new Error(message), { statusCode: 400 });
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
  const tokenFailures = new AttemptThrottle(ADMIN_TOKEN_MAX_FAILURES, ADMIN_TOKEN_LOCKOUT_SECONDS, options.throttleStore);

  // The bearer check of every admin route (and of /metrics when it is served here): Host and Origin, the token
  // from the vault, wrong tokens throttled per client address.
  const checkAdminToken = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
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
    // Guessing is bounded per client address, whatever the token's strength (an operator may pick a short one).
    const keys = [`address:${addressBucket(request.ip)}`];
    const wait = tokenFailures.attempt(keys);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      return sendProblem(reply, {
        status: 429,
        code: 'ADMIN_TOKEN_THROTTLED',
        title: 'Too many wrong admin tokens',
        detail: `${ADMIN_TOKEN_MAX_FAILURES} wrong admin tokens came from this address; try again in ${wait} s`,
      });
    }
    const header = request.headers.authorization ?? '';
    // RFC 6750 §2.1: `Bearer` followed by the token; the scheme name is case-insensitive (RFC 9110 §11.1).
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
    if (!match || !secretsEqual(match[1]!, expected)) {
      tokenFailures.failed(keys);
      return sendProblem(reply, {
        status: 401,
        code: 'ADMIN_TOKEN_INVALID',
        title: 'Admin token required',
        detail: 'send the admin token as `Authorization: Bearer <token>`',
      });
    }
    tokenFailures.succeeded(keys);
    return undefined;
  };

  const routes: FastifyPluginAsync = async (app) => {
    // Admin bodies are small and flat: JSON is parsed here, after the token check (an onRequest hook), with the
    // nesting checked on the raw text first (the /mcp route's scan), so hostile input is a 400 problem.
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      const text = body as string;
      if (exceedsJsonDepth(text, ADMIN_BODY_MAX_DEPTH)) {
        done(clientError(`the JSON body is nested deeper than ${ADMIN_BODY_MAX_DEPTH} levels`), undefined);
        return;
      }
      try {
        done(null, text === '' ? undefined : JSON.parse(text));
      } catch (error) {
        done(clientError(`the body is not valid JSON: ${(error as Error).message}`), undefined);
      }
    });
    app.addHook('onRequest', checkAdminToken);

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
        .sort(([a], [b]) => compareText(a, b))
        .map(([source, id]) => {
          const lockSource = snapshot.lock ? findSource(snapshot.lock, source) : undefined;
          const notOffered = lockSource ? inUsePublication(lockSource)?.notOffered : undefined;
          return { source, id, ...(counts.get(source) ?? { toolCount: 0, blockedCount: 0 }), ...(notOffered ? { notOffered } : {}) };
        });
      reply.header('cache-control', 'no-store');
      const lockReload = options.lastLockReload?.();
      const mcpRefusals = options.mcpRefusals?.();
      // Each endpoint's delivery state only (a paused endpoint is what an operator must act on).
      const webhooks = options.webhooks
        ? (await webhookSummaries(options.webhooks)).map(({ name, state, paused, disabled, pending }) => ({
            name,
            state,
            paused,
            disabled,
            pending,
          }))
        : undefined;
      return {
        ready: options.registry.isReady,
        publications,
        drift: options.drift?.report() ?? [],
        ...(lockReload ? { lockReload } : {}),
        ...(mcpRefusals ? { mcpRefusals } : {}),
        ...(webhooks ? { webhooks } : {}),
      };
    });

    // The push trigger for a deployment pipeline: re-read the description(s) now instead of at the next
    // interval, so a changed operation stops being callable as soon as the new API version is deployed.
    app.post<{ Body: { source?: unknown } | undefined }>('/drift/check', async (request, reply) => {
      const drift = options.drift;
      if (!drift?.checkNow) {
        return sendProblem(reply, {
          status: 409,
          code: 'DRIFT_DISABLED',
          title: 'Drift checks are off',
          detail: 'drift.enabled is false in gateway.yaml',
        });
      }
      const source = request.body?.source;
      if (source !== undefined && (typeof source !== 'string' || !Object.hasOwn(options.loaded.config.sources, source))) {
        return sendProblem(reply, {
          status: 404,
          code: 'SOURCE_UNKNOWN',
          title: 'Unknown source',
          detail: `no source ${JSON.stringify(source)} in gateway.yaml`,
        });
      }
      await drift.checkNow(source === undefined ? undefined : [source]);
      reply.header('cache-control', 'no-store');
      const answer: AdminDriftCheck = { drift: drift.report().filter((entry) => source === undefined || entry.source === source) };
      return answer;
    });

    if (options.receipts) registerReceiptRoutes(app, options.receipts, sendProblem);
    if (options.webhooks) registerWebhookRoutes(app, options.webhooks, sendProblem);
    // Tool name → fingerprint of every tool the in-use publications offer now (what approvals are compared with).
    const publishedFingerprints = (): Map<string, string> =>
      new Map([...options.registry.snapshot().tools].map(([name, tool]) => [name, tool.entry.fingerprint]));
    const sessionStore = (reply: FastifyReply): SessionStore | undefined => {
      if (options.sessions) return options.sessions;
      sendProblem(reply, {
        status: 404,
        code: 'ADMIN_SESSIONS_UNAVAILABLE',
        title: 'No sessions here',
        detail: 'this gateway runs without its authorization server, so it keeps no sessions',
      });
      return undefined;
    };
    const sessionNotFound = (reply: FastifyReply, id: string): FastifyReply =>
      sendProblem(reply, {
        status: 404,
        code: 'SESSION_NOT_FOUND',
        title: 'No such session',
        detail: `no session named '${id}'; \`gateway sessions list --all\` shows them`,
      });

    app.get('/sessions', async (_request, reply): Promise<AdminSessionList | FastifyReply> => {
      const store = sessionStore(reply);
      if (!store) return reply;
      reply.header('cache-control', 'no-store');
      const now = Date.now();
      const published = publishedFingerprints();
      return { sessions: (await store.listSessions()).map((session) => sessionView(session, published, now)) };
    });

    app.get<{ Params: { id: string } }>('/sessions/:id', async (request, reply): Promise<AdminSessionAnswer | FastifyReply> => {
      const store = sessionStore(reply);
      if (!store) return reply;
      const session = await store.session(request.params.id);
      if (!session) return sessionNotFound(reply, request.params.id);
      reply.header('cache-control', 'no-store');
      return { session: sessionView(session, publishedFingerprints()) };
    });

    app.post<{ Params: { id: string }; Body: { reason?: string } | undefined }>(
      '/sessions/:id/revoke',
      {
        schema: {
          body: {
            type: 'object',
            properties: { reason: { type: 'string', minLength: 1, maxLength: 500 } },
            additionalProperties: false,
          },
        },
      },
      async (request, reply): Promise<AdminSessionAnswer | FastifyReply> => {
        const store = sessionStore(reply);
        if (!store) return reply;
        const existing = await store.session(request.params.id);
        if (!existing) return sessionNotFound(reply, request.params.id);
        // Revoking an ended session changes nothing (its revocation, or its expiry, stays what it was): say so.
        const state = sessionState(existing);
        if (state !== 'open') {
          const why = existing.revokedReason ? ` (${existing.revokedReason})` : '';
          const ended =
            state === 'revoked'
              ? `was revoked at ${new Date(existing.revokedAt!).toISOString()}${why}`
              : `expired at ${new Date(existing.expiresAt).toISOString()}`;
          return sendProblem(reply, {
            status: 409,
            code: 'SESSION_ALREADY_ENDED',
            title: 'The session had already ended',
            detail: `${existing.id} had already ended: it ${ended}; nothing changed`,
          });
        }
        const session = await store.revokeSession(request.params.id, request.body?.reason ?? 'revoked by an administrator');
        reply.header('cache-control', 'no-store');
        return { session: sessionView(session, publishedFingerprints()) };
      },
    );

    app.setNotFoundHandler((request, reply) =>
      sendProblem(reply, {
        status: 404,
        code: 'ADMIN_ROUTE_NOT_FOUND',
        title: 'Not found',
        detail: `no admin route ${request.method} ${request.url}`,
      }),
    );

    app.setErrorHandler((error, request, reply) => {
      if ((error as { validation?: unknown }).validation) {
        return sendProblem(reply, { status: 400, code: 'ADMIN_REQUEST_INVALID', title: 'Bad request', detail: (error as Error).message });
      }
      // The request's own fault, found before a handler ran (a body that is not JSON, too large, of another type).
      const status = (error as { statusCode?: unknown }).statusCode;
      if (typeof status === 'number' && status >= 400 && status < 500) {
        const title = status === 413 ? 'Body too large' : status === 415 ? 'Unsupported media type' : 'Bad request';
        return sendProblem(reply, { status, code: 'ADMIN_REQUEST_INVALID', title, detail: (error as Error).message });
      }
      if (isDatabaseBusy(error)) {
        const busy = databaseBusyError(error);
        request.log.warn({ code: busy.code, error: (error as Error).message }, 'database busy; admin request answered 503');
        reply.header('retry-after', String(BUSY_RETRY_AFTER_SECONDS));
        return sendProblem(reply, { status: 503, code: busy.code, title: 'Database busy', detail: busy.message });
      }
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
    // Prometheus metrics behind the same token (docs/observability.md), unless they have a listener of their own.
    const metrics = options.metrics;
    if (metrics) {
      await app.register(async (scope) => {
        scope.addHook('onRequest', checkAdminToken);
        scope.get('/metrics', async (_request, reply) => {
          const { contentType, text } = await metrics();
          return reply.header('content-type', contentType).header('cache-control', 'no-store').send(text);
        });
      });
    }
  };
}
