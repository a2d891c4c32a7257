/**
 * `GET /admin/status` (what `gateway status` prints) and `POST /admin/drift/check` (the push trigger of a
 * deployment pipeline).
 */
import { compareText, findSource, inUsePublication, type AdminDriftCheck, type AdminStatus } from '@gateway/core';
import type { FastifyInstance } from 'fastify';
import { BEARER_HEADERS } from '../http/route-schemas.js';
import { webhookSummaries } from '../webhooks/summaries.js';
import type { AdminPluginOptions, AdminRegistry } from './options.js';

type Publications = AdminStatus['publications'];

/** Each in-use publication with its tool counts and, from the lock, the operations it does not offer. */
function publicationsOf(registry: AdminRegistry): Publications {
  const snapshot = registry.snapshot();
  const counts = new Map<string, { toolCount: number; blockedCount: number }>();
  for (const [name, tool] of snapshot.tools) {
    const count = counts.get(tool.sourceName) ?? { toolCount: 0, blockedCount: 0 };
    count.toolCount += 1;
    if (registry.blockedReason(tool.sourceName, name) !== undefined) count.blockedCount += 1;
    counts.set(tool.sourceName, count);
  }
  return [...snapshot.publications]
    .sort(([a], [b]) => compareText(a, b))
    .map(([source, id]) => {
      const lockSource = snapshot.lock ? findSource(snapshot.lock, source) : undefined;
      const notOffered = lockSource ? inUsePublication(lockSource)?.notOffered : undefined;
      return { source, id, ...(counts.get(source) ?? { toolCount: 0, blockedCount: 0 }), ...(notOffered ? { notOffered } : {}) };
    });
}

/** `{}` or `{ "source": name }`; no body at all checks every source too. */
const DRIFT_CHECK_BODY = {
  type: ['object', 'null'],
  properties: { source: { type: 'string', description: 'one source of gateway.yaml; all when absent' } },
} as const;

export function registerStatusRoutes(app: FastifyInstance, options: AdminPluginOptions): void {
  app.get('/status', { schema: { headers: BEARER_HEADERS } }, async (_request, reply): Promise<AdminStatus> => {
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
      publications: publicationsOf(options.registry),
      drift: options.drift?.report() ?? [],
      ...(lockReload ? { lockReload } : {}),
      ...(mcpRefusals ? { mcpRefusals } : {}),
      ...(webhooks ? { webhooks } : {}),
    };
  });

  // The push trigger for a deployment pipeline: re-read the description(s) now instead of at the next
  // interval, so a changed operation stops being callable as soon as the new API version is deployed.
  app.post<{ Body: { source?: unknown } | undefined }>(
    '/drift/check',
    { schema: { headers: BEARER_HEADERS, body: DRIFT_CHECK_BODY } },
    async (request, reply) => {
      const drift = options.drift;
      if (!drift?.checkNow)
        return reply.problem('DRIFT_DISABLED', 'drift.enabled is false in gateway.yaml', { title: 'Drift checks are off' });
      const source = request.body?.source;
      if (source !== undefined && (typeof source !== 'string' || !Object.hasOwn(options.loaded.config.sources, source))) {
        return reply.problem('SOURCE_UNKNOWN', `no source ${JSON.stringify(source)} in gateway.yaml`, {
          status: 404,
          title: 'Unknown source',
        });
      }
      await drift.checkNow(source === undefined ? undefined : [source]);
      reply.header('cache-control', 'no-store');
      const answer: AdminDriftCheck = { drift: drift.report().filter((entry) => source === undefined || entry.source === source) };
      return answer;
    },
  );
}
