/**
 * `/admin/sessions…`: what `gateway sessions list | show | revoke` read and do, over the authorization area's
 * session store (the same instance as the /mcp authorizer's, so a revocation here applies there at once).
 */
import type { AdminSession, AdminSessionAnswer, AdminSessionList } from '@gateway/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { markStaleTools } from '../authorization/consent/reapproval.js';
import { sessionState, type SessionRecord, type SessionStore } from '../authorization/stores/session-store.js';
import { BEARER_HEADERS, pathParameters } from '../http/route-schemas.js';
import type { AdminPluginOptions } from './options.js';

/**
 * The wire view of a session (core's admin-api.ts): ISO times, the state computed at `now`, and each tool
 * marked stale when the in-use publication no longer offers the fingerprint the person approved
 * (docs/authorization.md › Re-approval).
 */
export function sessionView(session: SessionRecord, published: ReadonlyMap<string, string>, now = Date.now()): AdminSession {
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

const SESSION = { headers: BEARER_HEADERS, params: pathParameters('id') } as const;
const REVOCATION_BODY = {
  type: 'object',
  properties: { reason: { type: 'string', minLength: 1, maxLength: 500 } },
  additionalProperties: false,
} as const;

/** "Revoked" or "expired", with when and why, for a session that had already ended. */
function endedSentence(session: SessionRecord): string {
  if (sessionState(session) === 'revoked') {
    const why = session.revokedReason ? ` (${session.revokedReason})` : '';
    return `was revoked at ${new Date(session.revokedAt!).toISOString()}${why}`;
  }
  return `expired at ${new Date(session.expiresAt).toISOString()}`;
}

export function registerSessionRoutes(app: FastifyInstance, options: Pick<AdminPluginOptions, 'sessions' | 'registry'>): void {
  // Tool name → fingerprint of every tool the in-use publications offer now (what approvals are compared with).
  const publishedFingerprints = (): Map<string, string> =>
    new Map([...options.registry.snapshot().tools].map(([name, tool]) => [name, tool.entry.fingerprint]));
  const sessionStore = (reply: FastifyReply): SessionStore | undefined => {
    if (options.sessions) return options.sessions;
    reply.problem('ADMIN_SESSIONS_UNAVAILABLE', 'this gateway runs without its authorization server, so it keeps no sessions', {
      title: 'No sessions here',
    });
    return undefined;
  };
  const sessionNotFound = (reply: FastifyReply, id: string): FastifyReply =>
    reply.problem('SESSION_NOT_FOUND', `no session named '${id}'; \`gateway sessions list --all\` shows them`, {
      title: 'No such session',
    });

  app.get('/sessions', { schema: { headers: BEARER_HEADERS } }, async (_request, reply): Promise<AdminSessionList | FastifyReply> => {
    const store = sessionStore(reply);
    if (!store) return reply;
    reply.header('cache-control', 'no-store');
    const now = Date.now();
    const published = publishedFingerprints();
    return { sessions: (await store.listSessions()).map((session) => sessionView(session, published, now)) };
  });

  app.get<{ Params: { id: string } }>(
    '/sessions/:id',
    { schema: SESSION },
    async (request, reply): Promise<AdminSessionAnswer | FastifyReply> => {
      const store = sessionStore(reply);
      if (!store) return reply;
      const session = await store.session(request.params.id);
      if (!session) return sessionNotFound(reply, request.params.id);
      reply.header('cache-control', 'no-store');
      return { session: sessionView(session, publishedFingerprints()) };
    },
  );

  app.post<{ Params: { id: string }; Body: { reason?: string } | undefined }>(
    '/sessions/:id/revoke',
    { schema: { ...SESSION, body: REVOCATION_BODY } },
    async (request, reply): Promise<AdminSessionAnswer | FastifyReply> => {
      const store = sessionStore(reply);
      if (!store) return reply;
      const existing = await store.session(request.params.id);
      if (!existing) return sessionNotFound(reply, request.params.id);
      // Revoking an ended session changes nothing (its revocation, or its expiry, stays what it was): say so.
      if (sessionState(existing) !== 'open') {
        return reply.problem('SESSION_ALREADY_ENDED', `${existing.id} had already ended: it ${endedSentence(existing)}; nothing changed`, {
          title: 'The session had already ended',
        });
      }
      const session = await store.revokeSession(request.params.id, request.body?.reason ?? 'revoked by an administrator');
      reply.header('cache-control', 'no-store');
      return { session: sessionView(session, publishedFingerprints()) };
    },
  );
}
