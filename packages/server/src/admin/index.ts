/**
 * The admin API, read by `gateway status`, `gateway sessions`, `gateway receipts`, `gateway webhooks` and
 * `gateway drift check`: routes under `/admin/`, protected by a bearer token that lives in the vault
 * (`admin.tokenSecret`, default `admin-token`). The token is read from the vault on every request, so
 * `gateway secrets rotate admin-token` takes effect without a restart. Errors are RFC 9457 problem details
 * (`application/problem+json`, `reply.problem` of http/problem.ts).
 */
import type { FastifyPluginAsync } from 'fastify';
import { addProblemReplies } from '../http/problem.js';
import { BEARER_HEADERS } from '../http/route-schemas.js';
import { registerLoginRoutes } from '../credentials/person/admin-routes.js';
import { registerReceiptRoutes } from '../receipts/admin-routes.js';
import { registerWebhookRoutes } from '../webhooks/routes/index.js';
import { adminGate } from './authentication.js';
import { addAdminJsonParser, answerAdminErrors } from './errors.js';
import type { AdminPluginOptions } from './options.js';
import { registerSessionRoutes } from './sessions.js';
import { registerStatusRoutes } from './status.js';

export { ADMIN_TOKEN_LOCKOUT_SECONDS, ADMIN_TOKEN_MAX_FAILURES } from './authentication.js';
export type { AdminPluginOptions, AdminRegistry } from './options.js';

export function createAdminPlugin(options: AdminPluginOptions): FastifyPluginAsync {
  const gate = adminGate({
    vault: options.vault,
    tokenSecret: options.loaded.config.admin?.tokenSecret ?? 'admin-token',
    guard: options.guard,
    ...(options.throttles ? { throttles: options.throttles } : {}),
  });
  const routes: FastifyPluginAsync = async (app) => {
    addProblemReplies(app);
    addAdminJsonParser(app);
    app.addHook('onRequest', gate);
    registerStatusRoutes(app, options);
    if (options.receipts) registerReceiptRoutes(app, options.receipts);
    if (options.webhooks) registerWebhookRoutes(app, options.webhooks);
    registerSessionRoutes(app, options);
    registerLoginRoutes(app, options.personLogins);
    answerAdminErrors(app);
  };
  // Prometheus metrics behind the same token (docs/observability.md), unless they have a listener of their own.
  const metrics = options.metrics;
  const metricsRoute: FastifyPluginAsync = async (scope) => {
    addProblemReplies(scope);
    scope.addHook('onRequest', gate);
    scope.get('/metrics', { schema: { headers: BEARER_HEADERS } }, async (_request, reply) => {
      const { contentType, text } = await metrics!();
      return reply.header('content-type', contentType).header('cache-control', 'no-store').send(text);
    });
  };
  // Encapsulated under /admin: the hook, 404 and error handlers touch no other area's routes.
  return async (app) => {
    await app.register(routes, { prefix: '/admin' });
    if (metrics) await app.register(metricsRoute);
  };
}
