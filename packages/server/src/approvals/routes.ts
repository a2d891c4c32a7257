/**
 * `GET /approvals/:id` and `POST /approvals/:id` (docs/approvals.md › At call time): the approval page and its
 * approve / deny form. Signed-in people only (a visitor without a sign-in is sent to the sign-in page and back);
 * who may decide: the session's own person, or, when the tool names `approvers`, those people and (for
 * `@operators`) anyone with the operator role. Everyone else gets 403.
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { OPERATORS_APPROVER } from '@gateway/core';
import { addFormParser, FORM_BODY, formOf } from '../authorization/oauth/http.js';
import { errorPage } from '../authorization/signin/pages.js';
import type { BrowserSessions, SignedInPerson } from '../authorization/signin/browser-sessions.js';
import { pathParameters } from '../http/route-schemas.js';
import { sendPage } from '../views/index.js';
import { approvalPage } from './pages.js';
import type { ApprovalRecord, Approvals } from './ports.js';

export interface ApprovalRoutesOptions {
  approvals: Approvals;
  browserSessions: BrowserSessions;
  /** The path of the gateway's URL (the sign-in page is `{basePath}/signin`). */
  basePath: string;
}

/** Whether this signed-in person may approve or deny the call. */
export function mayDecide(record: ApprovalRecord, person: SignedInPerson): boolean {
  if (record.approvers === null) return person.subject === record.subject;
  if (record.approvers.includes(OPERATORS_APPROVER) && (person.roles ?? []).includes('operator')) return true;
  return person.via === 'local' && record.approvers.includes(person.name);
}

const PARAMS = pathParameters('id');

export function approvalRoutes(options: ApprovalRoutesOptions): FastifyPluginAsync {
  const { approvals, browserSessions, basePath } = options;
  const notFound = () => errorPage('No such approval', 'This approval request does not exist. Call the tool again to ask anew.', 404);
  const forbidden = () => errorPage('Not yours to decide', 'Only the people the tool names may approve or deny this call.', 403);

  return async (instance) => {
    addFormParser(instance);

    instance.get(`${basePath}/approvals/:id`, { schema: { params: PARAMS } }, async (request, reply: FastifyReply) => {
      const { id } = request.params as { id: string };
      const browser = await browserSessions.find(request.headers.cookie);
      if (!browser?.person) {
        const back = `${basePath}/approvals/${encodeURIComponent(id)}`;
        return reply
          .status(303)
          .header('location', `${basePath}/signin?next=${encodeURIComponent(back)}`)
          .send();
      }
      const record = await approvals.find(id);
      if (!record) return sendPage(reply, notFound());
      if (!mayDecide(record, browser.person)) return sendPage(reply, forbidden());
      if (record.status === 'expired') await approvals.expire();
      return sendPage(reply, approvalPage(record, { csrfToken: browser.csrfToken, signedInAs: browser.person.name }));
    });

    instance.post(`${basePath}/approvals/:id`, { schema: { params: PARAMS, body: FORM_BODY } }, async (request, reply) => {
      const { id } = request.params as { id: string };
      const form = formOf(request);
      const browser = await browserSessions.find(request.headers.cookie);
      if (!browser?.person || !browserSessions.isCsrfTokenValid(browser, form.get('csrf_token') ?? undefined)) {
        return sendPage(
          reply,
          errorPage('The form has expired', 'The form was not sent from this page or has expired. Open the page again.', 403),
        );
      }
      const record = await approvals.find(id);
      if (!record) return sendPage(reply, notFound());
      if (!mayDecide(record, browser.person)) return sendPage(reply, forbidden());
      const choice = form.get('decision');
      if (choice !== 'approve' && choice !== 'deny')
        return sendPage(reply, errorPage('Choose approve or deny', 'The form sent no decision.', 400));
      const decided = await approvals.decide(id, choice === 'approve' ? 'approved' : 'denied', browser.person.name);
      if (decided === 'not-waiting') {
        if (record.status === 'expired' || (await approvals.find(id))?.status === 'expired') await approvals.expire();
        return sendPage(reply, errorPage('Already decided', 'This approval was decided, used or has expired: nothing changed.', 409));
      }
      // After a POST, 303 back to the page, which now shows the decision.
      return reply
        .status(303)
        .header('location', `${basePath}/approvals/${encodeURIComponent(id)}`)
        .send();
    });
  };
}
