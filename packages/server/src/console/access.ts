/**
 * Who may open the console: a person signed in through the gateway's sign-in pages (the browser session cookie)
 * who holds the operator role. A visitor not signed in is sent to sign in and brought back; anyone else gets a
 * 403 page. Every POST must carry the browser session's CSRF token.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PeopleDirectory } from '@gateway/runtime';
import { formOf } from '../authorization/oauth/http.js';
import type { BrowserSession, BrowserSessions, SignedInPerson } from '../authorization/signin/browser-sessions.js';
import { html, sendPage } from '../views/index.js';
import { consolePage } from './layout.js';

export interface ConsoleAccessOptions {
  browserSessions: BrowserSessions;
  people: PeopleDirectory;
  /** The gateway URL's path (`/` → ''): the console is at `${basePath}/console`, sign-in at `${basePath}/signin`. */
  basePath: string;
}

/** The operator looking at a console page, and the CSRF token its forms carry. */
export interface ConsoleViewer {
  person: SignedInPerson;
  csrfToken: string;
}

const viewers = new WeakMap<FastifyRequest, ConsoleViewer>();

/** The viewer the access hook admitted (every console route runs behind it). */
export function viewerOf(request: FastifyRequest): ConsoleViewer {
  const viewer = viewers.get(request);
  if (!viewer) throw new Error('console route reached without the access hook');
  return viewer;
}

/**
 * A local person's roles are read from the people file on every request, so removing the role (or the person)
 * takes effect at once; an OIDC person's are the ones the provider's claim gave at sign-in.
 */
async function isOperator(person: SignedInPerson, people: PeopleDirectory): Promise<boolean> {
  if (person.via === 'local') {
    const current = await people.find(person.name);
    return current !== undefined && current.subject === person.subject && current.roles.includes('operator');
  }
  return person.roles?.includes('operator') ?? false;
}

function refused(reply: FastifyReply, title: string, message: string): FastifyReply {
  return sendPage(reply, consolePage(title, html`<h1>${title}</h1>\n<p role="alert">${message}</p>`, { status: 403 }));
}

/** The `onRequest`-time check of every console route (run as a preHandler, once a POST's form is parsed). */
export function consoleAccessHook(options: ConsoleAccessOptions) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const browser: BrowserSession | undefined = await options.browserSessions.find(request.headers.cookie);
    const person = browser?.person;
    if (!browser || !person) {
      if (request.method === 'GET') {
        const signIn = `${options.basePath}/signin?next=${encodeURIComponent(request.url)}`;
        return reply.status(303).header('cache-control', 'no-store').header('location', signIn).send();
      }
      return refused(reply, 'Sign in first', 'This form was not sent by a signed-in operator. Sign in and try again.');
    }
    if (!(await isOperator(person, options.people))) {
      return refused(
        reply,
        'Operators only',
        `You are signed in as ${person.name}, who does not have the operator role. An operator can grant it with ` +
          '`gateway people roles <name> operator`, or through the identity provider group mapped in gateway.yaml.',
      );
    }
    if (request.method === 'POST' && !options.browserSessions.isCsrfTokenValid(browser, formOf(request).get('csrf_token') ?? undefined)) {
      return refused(
        reply,
        'The form has expired',
        'The form was not sent from a console page or has expired. Go back, reload and try again.',
      );
    }
    viewers.set(request, { person, csrfToken: browser.csrfToken });
    return undefined;
  };
}
