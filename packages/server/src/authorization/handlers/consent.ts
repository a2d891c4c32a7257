import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acceptedChoices, type ConsentChoices } from '../consent/choices.js';
import type { ConsentTool } from '../consent/consent-tool.js';
import type { PendingAuthorization } from '../consent/pending.js';
import { FORM_BODY, formOf, queryOf } from '../oauth/http.js';
import type { BrowserSession } from '../signin/browser-sessions.js';
import { errorPage } from '../signin/pages.js';
import { randomToken } from '../stores/tokens.js';
import { PENDING_REQUEST_QUERY, type BrowserFlow } from './browser-flow.js';
import { renderConsent } from './consent-page.js';
import type { AuthorizationDependencies } from './dependencies.js';

type ConsentDependencies = Pick<
  AuthorizationDependencies,
  'settings' | 'offer' | 'sessions' | 'codes' | 'browserSessions' | 'logger' | 'personLogins'
>;

/** What the person submitted, kept whole so a refused form is drawn again with exactly their choices. */
function submittedChoices(form: URLSearchParams): ConsentChoices {
  return {
    tools: [...new Set(form.getAll('tool'))],
    logins: [...new Set(form.getAll('login'))],
    lifetime: Number(form.get('lifetime')),
  };
}

/**
 * Opens the session with exactly the tools and logins the person chose, and issues the authorization code for it
 * (bound to the client, its redirect URI, the PKCE challenge and the resource).
 */
async function openSession(
  { settings, sessions, codes, logger }: Pick<ConsentDependencies, 'settings' | 'sessions' | 'codes' | 'logger'>,
  browser: BrowserSession,
  pendingRequest: PendingAuthorization,
  chosen: { tools: ConsentTool[]; logins: string[]; lifetime: number },
): Promise<string> {
  const now = Date.now();
  const opened = await sessions.open(
    {
      subject: browser.person!.subject,
      personName: browser.person!.name,
      clientId: pendingRequest.client.clientId,
      clientName: pendingRequest.client.name,
      // The fingerprints recorded are the ones shown: if a tool changes afterwards, /mcp refuses it.
      tools: chosen.tools.map((tool) => ({ name: tool.name, fingerprint: tool.fingerprint })).sort((a, b) => (a.name < b.name ? -1 : 1)),
      logins: chosen.logins.sort(),
      expiresAt: now + chosen.lifetime * 1000,
    },
    now,
  );
  const code = randomToken();
  await codes.save(code, {
    sessionId: opened.id,
    clientId: pendingRequest.client.clientId,
    redirectUri: pendingRequest.redirectUriParameter,
    codeChallenge: pendingRequest.codeChallenge,
    resource: pendingRequest.resource,
    expiresAt: Math.min(now + settings.codeSeconds * 1000, opened.expiresAt),
  });
  logger.info({ sessionId: opened.id, clientId: opened.clientId, subject: opened.subject, tools: opened.tools.length }, 'session opened');
  return code;
}

/**
 * The consent page and the decision it posts: on Allow, the session is opened with exactly the tools and
 * logins the person chose, and the client gets an authorization code for it.
 */
export function registerConsentEndpoint(instance: FastifyInstance, dependencies: ConsentDependencies, flow: BrowserFlow): void {
  const { settings, offer, sessions, browserSessions } = dependencies;
  const { pending, send, session, redirectBack, ownRequest, expiredPage, signInUrl } = flow;

  instance.get(`${settings.basePath}/consent`, { schema: { querystring: PENDING_REQUEST_QUERY } }, async (request, reply) => {
    const own = await ownRequest(request, queryOf(request).get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest, browser } = own;
    pendingRequest.isEngaged = true;
    await pending.save(pendingRequest);
    if (!browser.person) return reply.status(303).header('location', signInUrl(pendingRequest.id)).send();
    // The person's latest open session with this application: what a re-approval starts from.
    const previous = await sessions.latestOpen(browser.person.subject, pendingRequest.client.clientId);
    return send(reply, await renderConsent(dependencies, pending, browser, pendingRequest, previous ? { previous } : {}));
  });

  async function decide(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const form = formOf(request);
    const browser = await session(request);
    if (!browserSessions.isCsrfTokenValid(browser, form.get('csrf_token') ?? undefined)) {
      const why = 'This decision was not sent from the consent page or the page has expired. Nothing was approved.';
      return send(reply, errorPage('The form has expired', why, 403));
    }
    const own = await ownRequest(request, form.get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest } = own;
    if (!browser!.person) return reply.status(303).header('location', signInUrl(pendingRequest.id)).send();
    const decision = form.get('decision');
    if (decision === 'deny') {
      // Single use: another worker may have decided it a moment ago.
      if (!(await pending.take(pendingRequest.id))) return send(reply, expiredPage());
      return redirectBack(reply, pendingRequest, { error: 'access_denied', error_description: 'the person denied the request' });
    }
    const submitted = submittedChoices(form);
    // With the earlier session, so what changed since it is shown again beside the person's own choices.
    const refuse = async (error: string): Promise<FastifyReply> => {
      const previous = await sessions.latestOpen(browser!.person!.subject, pendingRequest.client.clientId);
      const extra = { error, status: 400, choices: submitted, ...(previous ? { previous } : {}) };
      return send(reply, await renderConsent(dependencies, pending, browser!, pendingRequest, extra));
    };
    if (decision !== 'allow') return refuse('Choose Allow or Deny.');
    const chosen = acceptedChoices(submitted, pendingRequest.shownTools ?? [], {
      knownLogins: new Set(offer.listLogins().map((login) => login.id)),
      lifetimeChoicesSeconds: settings.lifetimeChoicesSeconds,
    });
    if ('problem' in chosen) return refuse(chosen.problem);
    if (!(await pending.take(pendingRequest.id))) return send(reply, expiredPage());
    const code = await openSession(dependencies, browser!, pendingRequest, chosen);
    return redirectBack(reply, pendingRequest, { code });
  }

  instance.post(`${settings.basePath}/consent`, { schema: { body: FORM_BODY } }, decide);
}
