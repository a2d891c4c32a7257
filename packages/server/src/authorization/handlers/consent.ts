import type { FastifyInstance, FastifyReply } from 'fastify';
import { completeLogins, unavailableChoice } from '../consent/choices.js';
import { connectLinksFor } from '../consent/connect-links.js';
import type { ConsentTool } from '../consent/consent-tool.js';
import { consentPage, errorPage, lifetimeLabel, type ReapprovalNote, type RenderedPage } from '../consent/pages.js';
import type { PendingAuthorization } from '../consent/pending.js';
import { formOf, queryOf } from '../oauth/http.js';
import { isLocalhostOnly, redirectDisplayHost } from '../oauth/redirect-uris.js';
import type { BrowserSession } from '../signin/browser-sessions.js';
import type { SessionRecord } from '../stores/ports.js';
import { randomToken } from '../stores/tokens.js';
import type { BrowserFlow } from './browser-flow.js';
import type { AuthorizationDependencies } from './dependencies.js';

type ConsentDependencies = Pick<
  AuthorizationDependencies,
  'settings' | 'offer' | 'sessions' | 'codes' | 'browserSessions' | 'logger' | 'personLogins'
>;

interface ConsentChoices {
  tools: string[];
  logins: string[];
  lifetime?: number;
}

/** Where a form submitted on the consent page may end up (CSP form-action): the redirect's origin or scheme. */
function formTargetOf(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

/**
 * The consent page and the decision it posts: on Allow, the session is opened with exactly the tools and
 * logins the person chose, and the client gets an authorization code for it.
 */
export function registerConsentEndpoint(instance: FastifyInstance, dependencies: ConsentDependencies, flow: BrowserFlow): void {
  const { settings, offer, sessions, codes, browserSessions, logger, personLogins } = dependencies;
  const { pending, send, session, redirectBack, ownRequest, expiredPage, signInUrl } = flow;
  const base = settings.basePath;

  function lifetimes(): Array<{ seconds: number; label: string }> {
    return settings.lifetimeChoicesSeconds.map((seconds) => ({ seconds, label: lifetimeLabel(seconds) }));
  }

  /**
   * What the page starts with. Nothing, for a first approval. When the person already has an open session with
   * this application (it comes back for a re-approval: a step-up challenge named the changed tools in `scope`,
   * docs/authorization.md › Re-approval), the earlier choices are kept: its unchanged tools and their logins are
   * ticked and its time limit is preselected. A tool that changed since is shown with what changed and left
   * unticked: ticking it is the approval of a change, which one click on Allow must not give unread.
   */
  function initialChoices(
    pendingRequest: PendingAuthorization,
    tools: ConsentTool[],
    previous: SessionRecord | undefined,
  ): { choices: ConsentChoices; reapproval: ReapprovalNote[] } {
    // Blocked tools are shown but never ticked.
    const offered = new Map(tools.filter((tool) => unavailableChoice(tool) === undefined).map((tool) => [tool.name, tool] as const));
    const previousTools = (previous?.tools ?? []).filter((tool) => offered.has(tool.name));
    // Every tool of the earlier approval that changed since is marked, not only the one the client named.
    const reapproval = previousTools
      .filter((tool) => tool.fingerprint !== offered.get(tool.name)!.fingerprint)
      .map((tool) => ({ name: tool.name, changes: offer.changesSince(tool.name, tool.fingerprint) ?? null }));
    const changed = new Set(reapproval.map((note) => note.name));
    const requested = (pendingRequest.requestedTools ?? []).filter((name) => offered.has(name));
    const names = [...new Set([...previousTools.map((tool) => tool.name), ...requested])].filter((name) => !changed.has(name));
    const usable = new Set(names.flatMap((name) => offered.get(name)!.logins));
    const logins = (previous?.logins ?? []).filter((login) => usable.has(login));
    const completed = completeLogins(
      names.map((name) => offered.get(name)!),
      logins,
    );
    const earlierLifetime = previous ? Math.round((previous.expiresAt - previous.createdAt) / 1000) : undefined;
    return {
      choices: {
        tools: names,
        logins: 'logins' in completed ? completed.logins : logins,
        ...(earlierLifetime !== undefined && settings.lifetimeChoicesSeconds.includes(earlierLifetime)
          ? { lifetime: earlierLifetime }
          : {}),
      },
      reapproval,
    };
  }

  function renderConsent(
    browser: BrowserSession,
    pendingRequest: PendingAuthorization,
    extra: { error?: string; status?: number; choices?: ConsentChoices; previous?: SessionRecord } = {},
  ): RenderedPage {
    const tools = [...offer.listTools()].sort((a, b) => (a.source + a.name < b.source + b.name ? -1 : 1));
    pendingRequest.shownTools = tools;
    pending.save(pendingRequest);
    const neededLogins = new Set(tools.flatMap((tool) => tool.logins));
    const logins = offer.listLogins().filter((login) => neededLogins.has(login.id));
    const client = pendingRequest.client;
    // The changes are shown again when a refused form is drawn with the person's own choices.
    const initial = initialChoices(pendingRequest, tools, extra.previous);
    const choices = extra.choices ?? initial.choices;
    return consentPage({
      requestId: pendingRequest.id,
      csrfToken: browser.csrfToken,
      gateway: settings.issuer,
      person: { name: browser.person!.name, ...(browser.person!.email ? { email: browser.person!.email } : {}) },
      client: {
        name: client.name,
        clientId: client.clientId,
        registration:
          client.registration === 'metadata-document'
            ? 'identified by its metadata document'
            : client.registration === 'dynamic'
              ? 'registered itself; the name is unverified'
              : 'pre-registered by the gateway administrator',
      },
      redirectHost: redirectDisplayHost(pendingRequest.redirectUri),
      redirectFormTarget: formTargetOf(pendingRequest.redirectUri),
      isLocalhostOnly: isLocalhostOnly(client.redirectUris),
      tools,
      logins,
      lifetimes: lifetimes(),
      selected: choices,
      ...(initial.reapproval.length ? { reapproval: initial.reapproval } : {}),
      connect: connectLinksFor(personLogins, tools, browser.person!.subject),
      ...(extra.error ? { error: extra.error } : {}),
      ...(extra.status ? { status: extra.status } : {}),
    });
  }

  instance.get(`${base}/consent`, async (request, reply) => {
    const own = ownRequest(request, queryOf(request).get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest, browser } = own;
    pendingRequest.isEngaged = true;
    pending.save(pendingRequest);
    if (!browser.person) return reply.status(303).header('location', signInUrl(pendingRequest.id)).send();
    // The person's latest open session with this application: what a re-approval starts from.
    const previous = await sessions.latestOpen(browser.person.subject, pendingRequest.client.clientId);
    return send(reply, renderConsent(browser, pendingRequest, previous ? { previous } : {}));
  });

  instance.post(`${base}/consent`, async (request, reply) => {
    const form = formOf(request);
    const browser = session(request);
    if (!browserSessions.isCsrfTokenValid(browser, form.get('csrf_token') ?? undefined)) {
      return send(
        reply,
        errorPage(
          'The form has expired',
          'This decision was not sent from the consent page or the page has expired. Nothing was approved.',
          403,
        ),
      );
    }
    const own = ownRequest(request, form.get('request'));
    if ('page' in own) return send(reply, own.page);
    const { pendingRequest } = own;
    if (!browser!.person) return reply.status(303).header('location', signInUrl(pendingRequest.id)).send();
    const decision = form.get('decision');
    if (decision === 'deny') {
      // Single use: another worker may have decided it a moment ago.
      if (!pending.take(pendingRequest.id)) return send(reply, expiredPage());
      return redirectBack(reply, pendingRequest, { error: 'access_denied', error_description: 'the person denied the request' });
    }
    // A refused form is drawn again with exactly what the person submitted: nothing they picked is lost.
    const submitted: ConsentChoices = {
      tools: [...new Set(form.getAll('tool'))],
      logins: [...new Set(form.getAll('login'))],
      lifetime: Number(form.get('lifetime')),
    };
    // With the earlier session, so what changed since it is shown again beside the person's own choices.
    const refuse = async (error: string): Promise<FastifyReply> => {
      const previous = await sessions.latestOpen(browser!.person!.subject, pendingRequest.client.clientId);
      return send(
        reply,
        renderConsent(browser!, pendingRequest, { error, status: 400, choices: submitted, ...(previous ? { previous } : {}) }),
      );
    };
    if (decision !== 'allow') return refuse('Choose Allow or Deny.');

    const shown = new Map((pendingRequest.shownTools ?? []).map((tool) => [tool.name, tool] as const));
    const chosen: ConsentTool[] = [];
    for (const name of submitted.tools) {
      const tool = shown.get(name);
      if (!tool) return refuse(`The tool ${name} is not offered; choose again.`);
      const unavailable = unavailableChoice(tool);
      if (unavailable) return refuse(unavailable);
      chosen.push(tool);
    }
    if (chosen.length === 0) return refuse('Choose at least one tool, or Deny.');
    const usable = new Set(chosen.flatMap((tool) => tool.logins));
    const known = new Set(offer.listLogins().map((login) => login.id));
    const stray = submitted.logins.find((login) => !usable.has(login) || !known.has(login));
    if (stray) return refuse(`The login ${stray} is not used by the chosen tools; untick it or choose the tool that uses it.`);
    // A session with a tool but without its login would fail every call (LOGIN_NOT_IN_SESSION).
    const completed = completeLogins(chosen, submitted.logins);
    if ('problem' in completed) return refuse(completed.problem);
    const chosenLogins = completed.logins;
    const lifetime = submitted.lifetime ?? Number.NaN;
    if (!settings.lifetimeChoicesSeconds.includes(lifetime)) return refuse('Choose one of the offered time limits.');

    if (!pending.take(pendingRequest.id)) return send(reply, expiredPage());
    const now = Date.now();
    const opened = await sessions.open(
      {
        subject: browser!.person.subject,
        personName: browser!.person.name,
        clientId: pendingRequest.client.clientId,
        clientName: pendingRequest.client.name,
        // The fingerprints recorded are the ones shown: if a tool changes afterwards, /mcp refuses it.
        tools: chosen.map((tool) => ({ name: tool.name, fingerprint: tool.fingerprint })).sort((a, b) => (a.name < b.name ? -1 : 1)),
        logins: chosenLogins.sort(),
        expiresAt: now + lifetime * 1000,
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
    return redirectBack(reply, pendingRequest, { code });
  });
}
