/**
 * Admin API routes of per-person logins (`gateway logins list|unlink`), registered inside the admin plugin,
 * behind its bearer token. They show link metadata only; unlinking removes the link and the person's tokens.
 */
import type { AdminLinkedAccount, AdminLinkedAccountList, AdminUnlinkAnswer } from '@gateway/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { BEARER_HEADERS } from '../../http/route-schemas.js';
import type { LinkedAccount } from './ports.js';
import type { PersonLogins } from './index.js';

function accountView(account: LinkedAccount): AdminLinkedAccount {
  return {
    person: account.person,
    login: account.login,
    subject: account.subject,
    scopes: account.scopes,
    linkedAt: new Date(account.linkedAt).toISOString(),
    expiresAt: new Date(account.expiresAt).toISOString(),
  };
}

export function registerLoginRoutes(app: FastifyInstance, personLogins: Pick<PersonLogins, 'list' | 'unlink'> | undefined): void {
  app.get<{ Querystring: { person?: string } }>(
    '/logins',
    {
      schema: {
        headers: BEARER_HEADERS,
        querystring: { type: 'object', properties: { person: { type: 'string', minLength: 1 } }, additionalProperties: false },
      },
    },
    async (request, reply): Promise<AdminLinkedAccountList> => {
      reply.header('cache-control', 'no-store');
      const person = request.query.person;
      const accounts = personLogins ? await personLogins.list(person === undefined ? {} : { person }) : [];
      return { logins: accounts.map(accountView) };
    },
  );

  app.post<{ Body: { person: string; login: string } }>(
    '/logins/unlink',
    {
      schema: {
        headers: BEARER_HEADERS,
        body: {
          type: 'object',
          required: ['person', 'login'],
          properties: { person: { type: 'string', minLength: 1 }, login: { type: 'string', minLength: 1 } },
          additionalProperties: false,
        },
      },
    },
    async (request, reply): Promise<AdminUnlinkAnswer | FastifyReply> => {
      const { person, login } = request.body;
      const existing = personLogins ? (await personLogins.list({ person })).find((account) => account.login === login) : undefined;
      if (!personLogins || !existing || !(await personLogins.unlink(person, login))) {
        return reply.problem('PERSON_LOGIN_NOT_FOUND', `${person} has no link for ${login}; \`gateway logins list\` shows the links`, {
          status: 404,
          title: 'No such link',
        });
      }
      reply.header('cache-control', 'no-store');
      return { unlinked: accountView(existing) };
    },
  );
}
