/**
 * The Approvals page: one-call approvals (docs/approvals.md), waiting, decided (approved, denied, used) and
 * expired, newest first, 50 a page; each with its tool, session, person, client, who decided and when, and a
 * link to its approval page (where the people allowed to decide it do so). Read through the approvals port.
 */
import type { FastifyInstance } from 'fastify';
import type { ApprovalRecord, Approvals, ApprovalStatus } from '../approvals/ports.js';
import { QUERY_TEXT } from '../http/route-schemas.js';
import { badge, html, sendPage, table, type BadgeTone, type SafeHtml } from '../views/index.js';
import { viewerOf } from './access.js';
import type { ShowConsolePage } from './layout.js';

const PAGE_SIZE = 50;
/** Pages beyond this are not offered: the console shows recent approvals, not the whole history. */
const LAST_PAGE = 100;

/** The states the page filters by, each a set of the port's states. */
export const APPROVAL_VIEWS = {
  all: { label: 'any', statuses: undefined },
  waiting: { label: 'waiting', statuses: ['waiting'] },
  decided: { label: 'decided (approved, denied, used)', statuses: ['approved', 'denied', 'used'] },
  expired: { label: 'expired', statuses: ['expired'] },
} as const satisfies Record<string, { label: string; statuses: readonly ApprovalStatus[] | undefined }>;

export type ApprovalView = keyof typeof APPROVAL_VIEWS;

export interface ApprovalSearch {
  state?: string;
  page?: string;
}

const STATUS_TONE: Record<ApprovalStatus, BadgeTone> = {
  waiting: 'warn',
  approved: 'good',
  denied: 'bad',
  used: 'good',
  expired: 'plain',
};

/** The view a query names (anything unknown reads as `all`) and the page number (1 to LAST_PAGE). */
export function approvalQuery(search: ApprovalSearch): { view: ApprovalView; page: number } {
  const view = Object.hasOwn(APPROVAL_VIEWS, search.state ?? '') ? (search.state as ApprovalView) : 'all';
  const page = /^[1-9][0-9]{0,2}$/.test(search.page ?? '') ? Math.min(Number(search.page), LAST_PAGE) : 1;
  return { view, page };
}

/** One page of approvals, and whether an older page follows. */
export async function approvalsPage(
  approvals: Approvals,
  query: { view: ApprovalView; page: number },
  now = Date.now(),
): Promise<{ records: ApprovalRecord[]; hasOlder: boolean }> {
  const statuses = APPROVAL_VIEWS[query.view].statuses;
  // One more than a page: whether there is an older one, without counting the table.
  const found = await approvals.list(
    { ...(statuses ? { statuses } : {}), limit: PAGE_SIZE + 1, offset: (query.page - 1) * PAGE_SIZE },
    now,
  );
  return { records: found.slice(0, PAGE_SIZE), hasOlder: found.length > PAGE_SIZE && query.page < LAST_PAGE };
}

const time = (epoch: number) => {
  const iso = new Date(epoch).toISOString();
  return html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}</time>`;
};

function decisionCell(record: ApprovalRecord): SafeHtml {
  if (record.decidedBy === null || record.decidedAt === null) {
    return record.status === 'expired' ? html`unanswered, expired ${time(record.expiresAt)}` : html`<span class="hint">not yet</span>`;
  }
  const verb = record.status === 'denied' ? 'denied' : 'approved';
  const expired = record.status === 'expired' ? html`; unused, expired ${time(record.expiresAt)}` : '';
  const used = record.usedAt ? html`; used ${time(record.usedAt)}` : '';
  return html`${verb} by ${record.decidedBy}, ${time(record.decidedAt)}${expired}${used}`;
}

function filterForm(consolePath: string, view: ApprovalView): SafeHtml {
  const options = Object.entries(APPROVAL_VIEWS).map(
    ([value, { label }]) => html`<option value="${value}"${value === view ? html` selected` : ''}>${label}</option>`,
  );
  return html`<form method="get" action="${consolePath}/approvals" class="filters" role="search" aria-label="Filter approvals">
<div class="field"><label for="filter-state">State</label><select id="filter-state" name="state">${options}</select></div>
<div class="field actions"><button type="submit" class="allow">Show</button></div>
</form>`;
}

export function approvalsBody(
  paths: { consolePath: string; basePath: string },
  query: { view: ApprovalView; page: number },
  found: { records: ApprovalRecord[]; hasOlder: boolean },
): SafeHtml {
  const pageLink = (page: number) => `${paths.consolePath}/approvals?${new URLSearchParams({ state: query.view, page: String(page) })}`;
  const pager = [
    query.page > 1 ? html`<a href="${pageLink(query.page - 1)}">Newer approvals</a>` : '',
    found.hasOlder ? html`<a href="${pageLink(query.page + 1)}">Older approvals</a>` : '',
  ].filter((link) => link !== '');
  return html`${filterForm(paths.consolePath, query.view)}
${table(
  `Approvals (${APPROVAL_VIEWS[query.view].label}), newest first, page ${query.page}`,
  [
    { label: 'Asked', cell: (record: ApprovalRecord) => time(record.createdAt) },
    { label: 'Tool', cell: (record) => html`<code>${record.tool}</code> <span class="hint">${record.target}</span>` },
    { label: 'Session', cell: (record) => html`<code>${record.sessionId}</code>` },
    { label: 'Person', cell: (record) => record.personName },
    { label: 'Client', cell: (record) => record.clientName },
    { label: 'State', cell: (record) => badge(record.status, STATUS_TONE[record.status]) },
    { label: 'Decision', cell: decisionCell },
    {
      label: 'Page',
      cell: (record) => {
        const label = `Open the approval page of ${record.tool} for ${record.personName} (${record.id})`;
        return html`<a href="${paths.basePath}/approvals/${encodeURIComponent(record.id)}" aria-label="${label}">Open</a>`;
      },
    },
  ],
  found.records,
  query.page > 1 ? 'No approval on this page.' : 'No approval in this state.',
)}
${pager.length ? html`<p class="pager">${pager[0]!}${pager[1] ? html` · ${pager[1]}` : ''}</p>` : ''}
<p class="hint">An approval page is open to the people who may decide it (the session's person, or the tool's <code>approvers</code>).</p>`;
}

/** `GET /console/approvals?state=&page=`, behind the console's access hook. */
export function registerApprovalsPage(
  app: FastifyInstance,
  context: { show: ShowConsolePage; consolePath: string; basePath: string; approvals: Approvals | undefined },
): void {
  const querystring = { type: 'object', properties: { state: QUERY_TEXT, page: QUERY_TEXT } } as const;
  app.get('/approvals', { schema: { querystring } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const query = approvalQuery(request.query as ApprovalSearch);
    const body = context.approvals
      ? approvalsBody(context, query, await approvalsPage(context.approvals, query))
      : html`<p class="hint">Approvals are not kept by this gateway.</p>`;
    return sendPage(reply, context.show('Approvals', '/approvals', viewer.person.name, body));
  });
}
