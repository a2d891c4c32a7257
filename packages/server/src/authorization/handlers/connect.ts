import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BrowserIdentity, LinkOutcome } from '../../credentials/person/index.js';
import { errorPage, noticePage } from '../consent/pages.js';
import { queryOf } from '../oauth/http.js';
import type { BrowserFlow } from './browser-flow.js';
import type { AuthorizationDependencies } from './dependencies.js';

type ConnectDependencies = Pick<AuthorizationDependencies, 'settings' | 'personLogins'>;

/**
 * The connect page of per-person logins (`/connect?ticket=…`) and the provider's callback
 * (`/connect/callback`): linking runs in credentials/person/linking.ts; this answers its outcomes. The page
 * requires the ticket's own person signed in to the gateway in this browser, and the callback the same browser.
 */
export function registerConnectEndpoints(
  instance: FastifyInstance,
  { settings, personLogins }: ConnectDependencies,
  flow: BrowserFlow,
): void {
  if (!personLogins) return;
  const base = settings.basePath;
  const { linking } = personLogins;

  function identity(request: FastifyRequest): BrowserIdentity {
    const browser = flow.session(request);
    return { browserId: browser?.browserId ?? '', person: browser?.person?.subject };
  }

  function answer(reply: FastifyReply, outcome: LinkOutcome): FastifyReply {
    reply.header('cache-control', 'no-store');
    switch (outcome.kind) {
      case 'redirect':
        return reply.status(303).header('location', outcome.location).send();
      case 'linked':
        return flow.send(
          reply,
          noticePage(
            `Connected ${outcome.label}`,
            `Your ${outcome.label} account is linked for ${outcome.account.login}. Go back to your application: its next call ` +
              'runs as you. You can close this tab.',
          ),
        );
      case 'refused':
        return flow.send(reply, errorPage(outcome.title, outcome.message, outcome.status));
      default: {
        const unreachable: never = outcome;
        return unreachable;
      }
    }
  }

  instance.get(`${base}/connect/callback`, async (request, reply) =>
    answer(reply, await linking.complete(new URL(request.url, settings.issuer), identity(request))),
  );

  instance.get(`${base}/connect`, async (request, reply) =>
    answer(reply, await linking.begin(queryOf(request).get('ticket') ?? '', identity(request))),
  );
}
