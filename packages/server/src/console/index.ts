/**
 * The operator console at `{gateway_url}/console` (docs/console.md): server-rendered pages on the shared views,
 * working without JavaScript, for signed-in people with the operator role. It reads what the admin API reads
 * (the same registry, drift watcher, session store, receipt log and webhook service) and acts where acting is
 * not a git change: revoking a session, resuming a webhook endpoint, unlinking a person's login. It lists one-call
 * approvals too (read through the approvals port); deciding one stays on its approval page.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { AdminPluginOptions } from '../admin/options.js';
import type { Approvals } from '../approvals/ports.js';
import { addFormParser, FORM_BODY } from '../authorization/oauth/http.js';
import { sessionState } from '../authorization/stores/session-store.js';
import { NO_PARAMETERS, pathParameters, QUERY_TEXT } from '../http/route-schemas.js';
import { html, sendPage } from '../views/index.js';
import { consoleAccessHook, viewerOf, type ConsoleAccessOptions } from './access.js';
import { receiptIndexOf, receiptProof } from '../receipts/proof.js';
import { receiptConsoleAction } from './actions.js';
import { registerApprovalsPage } from './approvals.js';
import { consolePage, heading, type ShowConsolePage } from './layout.js';
import { registerLoginsPage } from './logins.js';
import { receiptBody, receiptsBody, searchReceipts, type ReceiptSearch } from './receipts.js';
import { sessionsBody, sessionViews } from './sessions.js';
import { sourcesBody } from './sources.js';
import { registerWebhooksPage } from './webhooks.js';

export interface ConsoleOptions extends ConsoleAccessOptions {
  /** The areas the console shows: the same instances the admin API is given, and the one-call approvals. */
  areas: Pick<AdminPluginOptions, 'registry' | 'drift' | 'sessions' | 'receipts' | 'webhooks' | 'personLogins'> & {
    approvals?: Approvals;
  };
}

const textQuery = (...names: readonly string[]) =>
  ({ type: 'object', properties: Object.fromEntries(names.map((name) => [name, QUERY_TEXT])) }) as const;

/** The console of a gateway whose authorization area signs people in (what gateway.ts wires). */
export function consolePluginOf(
  browser: { sessions: ConsoleAccessOptions['browserSessions']; people: ConsoleAccessOptions['people']; basePath: string },
  areas: ConsoleOptions['areas'],
): FastifyPluginAsync {
  return createConsolePlugin({ browserSessions: browser.sessions, people: browser.people, basePath: browser.basePath, areas });
}

export function createConsolePlugin(options: ConsoleOptions): FastifyPluginAsync {
  const consolePath = `${options.basePath}/console`;
  const { areas } = options;

  const routes = async (app: FastifyInstance): Promise<void> => {
    addFormParser(app);
    // preHandler: after a POST's form is parsed, so its CSRF token can be checked.
    app.addHook('preHandler', consoleAccessHook(options));

    const show: ShowConsolePage = (title, current, operator, body, status) =>
      consolePage(title, html`${heading(title, operator)}\n${body}`, {
        nav: { basePath: options.basePath, current },
        ...(status === undefined ? {} : { status }),
      });

    app.get('', { schema: NO_PARAMETERS }, async (request, reply) =>
      sendPage(reply, show('Sources and publications', '', viewerOf(request).person.name, sourcesBody(areas))),
    );

    app.get('/sessions', { schema: { querystring: textQuery('revoked') } }, async (request, reply) => {
      const viewer = viewerOf(request);
      const revoked = (request.query as { revoked?: string }).revoked;
      const sessions = await sessionViews(areas);
      // Said only of a session the page shows as revoked: a link cannot put words of its own on the console.
      const isRevoked = revoked !== undefined && sessions.some((session) => session.id === revoked && session.state === 'revoked');
      const body = sessionsBody({
        sessions,
        csrfToken: viewer.csrfToken,
        consolePath,
        ...(isRevoked ? { notice: `${revoked} is revoked: its client's next call to /mcp is refused.` } : {}),
      });
      return sendPage(reply, show('Sessions', '/sessions', viewer.person.name, body));
    });

    app.post('/sessions/:id/revoke', { schema: { params: pathParameters('id'), body: FORM_BODY } }, async (request, reply) => {
      const viewer = viewerOf(request);
      const { id } = request.params as { id: string };
      const existing = areas.sessions ? await areas.sessions.session(id) : undefined;
      if (!areas.sessions || !existing) {
        return sendPage(
          reply,
          show('No such session', '/sessions', viewer.person.name, html`<p role="alert">There is no session ${id}.</p>`, 404),
        );
      }
      if (sessionState(existing) === 'open') {
        await areas.sessions.revokeSession(id, `revoked by ${viewer.person.name} in the console`);
        await receiptConsoleAction(areas.receipts, viewer.person, { action: 'session.revoke', target: id, session: id });
      }
      return reply
        .status(303)
        .header('location', `${consolePath}/sessions?revoked=${encodeURIComponent(id)}`)
        .send();
    });

    app.get(
      '/receipts',
      { schema: { querystring: textQuery('session', 'person', 'tool', 'outcome', 'since', 'until', 'before') } },
      async (request, reply) => {
        const viewer = viewerOf(request);
        const search = request.query as ReceiptSearch;
        const body = areas.receipts
          ? receiptsBody(consolePath, search, await searchReceipts(areas.receipts, search))
          : html`<p class="hint">Receipts are off (gateway.yaml › receipts).</p>`;
        return sendPage(reply, show('Receipts', '/receipts', viewer.person.name, body));
      },
    );

    app.get('/receipts/:id', { schema: { params: pathParameters('id') } }, async (request, reply) => {
      const viewer = viewerOf(request);
      const { id } = request.params as { id: string };
      const index = receiptIndexOf(id);
      const receipt = index === undefined ? undefined : await areas.receipts?.store.get(index);
      if (!receipt || !areas.receipts) {
        return sendPage(
          reply,
          show('No such receipt', '/receipts', viewer.person.name, html`<p role="alert">There is no receipt ${id}.</p>`, 404),
        );
      }
      const proof = await receiptProof(areas.receipts, receipt.index);
      return sendPage(reply, show(`Receipt ${receipt.id}`, '/receipts', viewer.person.name, receiptBody(consolePath, receipt, proof)));
    });

    registerWebhooksPage(app, { show, consolePath, webhooks: areas.webhooks, receipts: areas.receipts });
    registerLoginsPage(app, { show, consolePath, personLogins: areas.personLogins, receipts: areas.receipts });
    registerApprovalsPage(app, { show, consolePath, basePath: options.basePath, approvals: areas.approvals });
  };
  // Encapsulated under /console: the access hook and the form parser touch no other area's routes.
  return async (app) => {
    await app.register(routes, { prefix: consolePath });
  };
}
