/**
 * The Receipts page: a search by session, person, tool and outcome, newest first, a page at a time; and one
 * receipt with every field it records (the arguments only when `receipts.storeArguments` kept them).
 */
import type { Receipt, ReceiptOutcome } from '@gateway/core';
import type { ReceiptLog } from '../receipts/log.js';
import { badge, html, table, type BadgeTone, type SafeHtml } from '../views/index.js';

export const RECEIPT_OUTCOMES: readonly ReceiptOutcome[] = ['allowed', 'denied', 'action-required', 'error'];
const FILTERS = ['session', 'person', 'tool', 'outcome'] as const;
const PAGE_SIZE = 50;

export type ReceiptSearch = Partial<Record<(typeof FILTERS)[number] | 'before', string>>;

const OUTCOME_TONE: Record<ReceiptOutcome, BadgeTone> = { allowed: 'good', denied: 'bad', 'action-required': 'warn', error: 'bad' };

export function receiptIndexOf(id: string | undefined): number | undefined {
  const match = id === undefined ? null : /^receipt-(0|[1-9][0-9]{0,15})$/.exec(id);
  return match ? Number(match[1]) : undefined;
}

/** The receipts a search names, newest first, and the id to continue from when there are more. */
export async function searchReceipts(log: ReceiptLog, search: ReceiptSearch): Promise<{ receipts: Receipt[]; next?: string }> {
  const before = receiptIndexOf(search.before);
  const outcome = RECEIPT_OUTCOMES.find((known) => known === search.outcome);
  const receipts = await log.store.list({
    ...(search.session ? { session: search.session } : {}),
    ...(search.person ? { person: search.person } : {}),
    ...(search.tool ? { tool: search.tool } : {}),
    ...(outcome ? { outcome } : {}),
    ...(before === undefined ? {} : { beforeIndex: before }),
    newestFirst: true,
    limit: PAGE_SIZE,
  });
  return { receipts, ...(receipts.length === PAGE_SIZE ? { next: receipts.at(-1)!.id } : {}) };
}

function textField(name: string, label: string, value: string | undefined): SafeHtml {
  return html`<div class="field"><label for="filter-${name}">${label}</label>
<input type="text" id="filter-${name}" name="${name}" value="${value ?? ''}"></div>`;
}

function searchForm(consolePath: string, search: ReceiptSearch): SafeHtml {
  const options = [
    html`<option value="">any</option>`,
    ...RECEIPT_OUTCOMES.map((outcome) => html`<option${search.outcome === outcome ? html` selected` : ''}>${outcome}</option>`),
  ];
  return html`<form method="get" action="${consolePath}/receipts" class="filters" role="search" aria-label="Search receipts">
${textField('session', 'Session (session-n)', search.session)}
${textField('person', 'Person (subject, e.g. local:alice)', search.person)}
${textField('tool', 'Tool', search.tool)}
<div class="field"><label for="filter-outcome">Outcome</label><select id="filter-outcome" name="outcome">${options}</select></div>
<div class="field actions"><button type="submit" class="allow">Search</button></div>
</form>`;
}

export function receiptsBody(consolePath: string, search: ReceiptSearch, found: { receipts: Receipt[]; next?: string }): SafeHtml {
  const nextQuery = new URLSearchParams();
  for (const name of FILTERS) if (search[name]) nextQuery.set(name, search[name]!);
  if (found.next) nextQuery.set('before', found.next);
  return html`${searchForm(consolePath, search)}
${table(
  'Receipts, newest first',
  [
    { label: 'Receipt', cell: (receipt: Receipt) => html`<a href="${consolePath}/receipts/${receipt.id}">${receipt.id}</a>` },
    { label: 'Time', cell: (receipt) => receipt.time },
    { label: 'Tool', cell: (receipt) => html`<code>${receipt.tool}</code>` },
    {
      label: 'Outcome',
      cell: (receipt) =>
        html`${badge(receipt.outcome, OUTCOME_TONE[receipt.outcome])}${receipt.reason ? html` <code>${receipt.reason}</code>` : ''}`,
    },
    { label: 'Session', cell: (receipt) => receipt.session ?? 'none' },
    { label: 'Person', cell: (receipt) => receipt.person ?? 'none' },
  ],
  found.receipts,
  'No receipt matches this search.',
)}
${found.next ? html`<p><a href="${consolePath}/receipts?${nextQuery.toString()}">Older receipts</a></p>` : ''}`;
}

export function receiptBody(consolePath: string, receipt: Receipt): SafeHtml {
  const row = (label: string, value: SafeHtml | string | number | null) => html`<dt>${label}</dt><dd>${value ?? 'none'}</dd>`;
  return html`<dl>
${row('Time', receipt.time)}
${row('Tool', html`<code>${receipt.tool}</code>`)}
${row('Outcome', html`${badge(receipt.outcome, OUTCOME_TONE[receipt.outcome])}`)}
${row('Reason', receipt.reason)}
${row('Session', receipt.session)}
${row('Person', receipt.person)}
${row('Client', receipt.clientId)}
${row('Source', receipt.source)}
${row('Publication', receipt.publication)}
${row('Fingerprint', receipt.fingerprint ? html`<code>${receipt.fingerprint}</code>` : null)}
${row('Login', receipt.login)}
${row('Upstream status', receipt.upstreamStatus)}
${row('Duration', `${receipt.durationMs} ms`)}
${row('Arguments digest', html`<code>${receipt.argumentsDigest}</code>`)}
${row('Result digest', receipt.resultDigest ? html`<code>${receipt.resultDigest}</code>` : null)}
${receipt.arguments === undefined ? '' : row('Arguments', html`<code>${JSON.stringify(receipt.arguments)}</code>`)}
</dl>
<p class="hint">Its inclusion proof: <code>gateway receipts prove ${receipt.id}</code>.</p>
<p><a href="${consolePath}/receipts">Back to the search</a></p>`;
}
