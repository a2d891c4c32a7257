/**
 * The Logins page: the links of OAuth per person (`oauthPerson`, docs/credentials.md), metadata only (never a
 * token), each with an Unlink form. It reads and unlinks through the same service as `gateway logins list|unlink`
 * (credentials/person/): unlinking removes the link and the person's tokens from the vault, and their next call
 * of a tool using the login asks them to link again. An unlink is receipted as the console action `login.unlink`.
 */
import type { FastifyInstance } from 'fastify';
import { FORM_BODY, formOf } from '../authorization/oauth/http.js';
import type { LinkedAccount, PersonLogins } from '../credentials/person/index.js';
import { QUERY_TEXT } from '../http/route-schemas.js';
import { hiddenField, html, postForm, sendPage, table, type SafeHtml } from '../views/index.js';
import type { ReceiptLog } from '../receipts/log.js';
import { viewerOf } from './access.js';
import { receiptConsoleAction } from './actions.js';
import { timeLeft, type ShowConsolePage } from './layout.js';

export type ConsoleLogins = Pick<PersonLogins, 'list' | 'unlink' | 'settings'>;

export interface LoginsPageInput {
  /** Undefined when gateway.yaml configures no per-person login. */
  links: readonly LinkedAccount[] | undefined;
  csrfToken: string;
  /** Where the console is: `${basePath}/console`. */
  consolePath: string;
  notice?: string;
}

const isoTime = (epoch: number) => new Date(epoch).toISOString();

export function loginsBody({ links, csrfToken, consolePath, notice }: LoginsPageInput, now = Date.now()): SafeHtml {
  if (links === undefined) {
    return html`<p class="hint">No login of <code>type: oauthPerson</code> is configured in gateway.yaml: there is nothing to link.</p>`;
  }
  return html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
${table(
  'Linked accounts, by person and login',
  [
    { label: 'Person', cell: (link: LinkedAccount) => html`<code>${link.person}</code>` },
    { label: 'Login', cell: (link) => html`<code>${link.login}</code>` },
    { label: 'At the provider', cell: (link) => link.subject ?? html`<span class="hint">not told</span>` },
    { label: 'Scopes', cell: (link) => (link.scopes.length > 0 ? link.scopes.join(' ') : 'none') },
    { label: 'Linked', cell: (link) => html`<time datetime="${isoTime(link.linkedAt)}">${isoTime(link.linkedAt)}</time>` },
    {
      label: 'Access token',
      cell: (link) =>
        link.expiresAt > now ? `valid ${timeLeft(isoTime(link.expiresAt), now)} more` : 'expired (refreshed at the next call)',
    },
    {
      label: 'Action',
      cell: (link) =>
        postForm(
          `${consolePath}/logins/unlink`,
          csrfToken,
          html`${hiddenField('person', link.person)}${hiddenField('login', link.login)}
<button type="submit" class="deny" aria-label="Unlink ${link.login} of ${link.person}">Unlink</button>`,
          { className: 'inline' },
        ),
    },
  ],
  links,
  'No person has linked an account yet.',
)}
<p class="hint">Unlinking removes the link and the person's tokens; their next call of a tool using the login asks them
to link again. The same as <code>gateway logins unlink &lt;person&gt; &lt;login&gt;</code>.</p>`;
}

/** `GET /console/logins` and the Unlink form's `POST /console/logins/unlink`, behind the console's access hook. */
export function registerLoginsPage(
  app: FastifyInstance,
  context: { show: ShowConsolePage; consolePath: string; personLogins: ConsoleLogins | undefined; receipts: ReceiptLog | undefined },
): void {
  const { show, consolePath, personLogins, receipts } = context;
  const querystring = { type: 'object', properties: { unlinked: QUERY_TEXT, person: QUERY_TEXT } } as const;
  app.get('/logins', { schema: { querystring } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const { unlinked, person } = request.query as { unlinked?: string; person?: string };
    const links = personLogins ? await personLogins.list() : undefined;
    // Said only of a per-person login this gateway has, for a person who has no link for it now: a link cannot put
    // words of its own on the console.
    const isUnlinked =
      unlinked !== undefined &&
      person !== undefined &&
      personLogins?.settings.has(unlinked) === true &&
      !links?.some((link) => link.person === person && link.login === unlinked);
    const body = loginsBody({
      links,
      csrfToken: viewer.csrfToken,
      consolePath,
      ...(isUnlinked ? { notice: `${unlinked} of ${person} is unlinked: the person's next call using it asks them to link again.` } : {}),
    });
    return sendPage(reply, show('Logins', '/logins', viewer.person.name, body));
  });

  app.post('/logins/unlink', { schema: { body: FORM_BODY } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const form = formOf(request);
    const person = form.get('person') ?? '';
    const login = form.get('login') ?? '';
    // What `gateway logins unlink` does (credentials/person/admin-routes.ts): only an existing link is removed.
    const existing = personLogins && person && login ? await personLogins.list({ person }) : [];
    if (!personLogins || !existing.some((link) => link.login === login) || !(await personLogins.unlink(person, login))) {
      const message = html`<p role="alert">${person || 'This person'} has no link for ${login || 'this login'}: nothing changed.</p>`;
      return sendPage(reply, show('No such link', '/logins', viewer.person.name, message, 404));
    }
    await receiptConsoleAction(receipts, viewer.person, { action: 'login.unlink', target: `${person} ${login}` });
    return reply
      .status(303)
      .header('location', `${consolePath}/logins?unlinked=${encodeURIComponent(login)}&person=${encodeURIComponent(person)}`)
      .send();
  });
}
