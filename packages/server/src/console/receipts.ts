/**
 * The Receipts page: a search by session, person, tool, outcome and time, newest first, a page at a time; and one
 * receipt with every field it records (the arguments only when `receipts.storeArguments` kept them), its
 * inclusion proof and the signed checkpoint that covers it, checked here.
 */
import { receiptProofHolds, type AdminReceiptProof, type Receipt, type ReceiptOutcome } from '@gateway/core';
import type { ReceiptLog } from '../receipts/log.js';
import { receiptIndexOf } from '../receipts/proof.js';
import { badge, html, table, type BadgeTone, type SafeHtml } from '../views/index.js';

export const RECEIPT_OUTCOMES: readonly ReceiptOutcome[] = ['allowed', 'denied', 'action-required', 'error'];
const FILTERS = ['session', 'person', 'tool', 'outcome', 'since', 'until'] as const;
const PAGE_SIZE = 50;

export type ReceiptSearch = Partial<Record<(typeof FILTERS)[number] | 'before', string>>;

const OUTCOME_TONE: Record<ReceiptOutcome, BadgeTone> = { allowed: 'good', denied: 'bad', 'action-required': 'warn', error: 'bad' };

/**
 * A time the search form was given: ISO 8601, read as UTC when it names no offset (`2026-11-27T09:00`). Undefined
 * when empty; `invalid` when it is not a time.
 */
export function searchTimeOf(text: string | undefined): string | 'invalid' | undefined {
  const trimmed = text?.trim();
  if (!trimmed) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?)?(Z|[+-]\d{2}:\d{2})?$/.test(trimmed)) return 'invalid';
  const hasOffset = /(Z|[+-]\d{2}:\d{2})$/.test(trimmed);
  const hasTime = /[T ]\d{2}:/.test(trimmed);
  const time = Date.parse(hasOffset || !hasTime ? trimmed.replace(' ', 'T') : `${trimmed.replace(' ', 'T')}Z`);
  return Number.isNaN(time) ? 'invalid' : new Date(time).toISOString();
}

/** The receipts a search names, newest first, and the id to continue from when there are more. */
export async function searchReceipts(
  log: ReceiptLog,
  search: ReceiptSearch,
): Promise<{ receipts: Receipt[]; next?: string; invalid?: string[] }> {
  const before = receiptIndexOf(search.before);
  const outcome = RECEIPT_OUTCOMES.find((known) => known === search.outcome);
  const since = searchTimeOf(search.since);
  const until = searchTimeOf(search.until);
  const invalid = [since === 'invalid' ? 'From' : undefined, until === 'invalid' ? 'Until' : undefined].filter(
    (name): name is string => name !== undefined,
  );
  // A time that is not one filters nothing and says so: an empty list would read as "no receipt then".
  if (invalid.length > 0) return { receipts: [], invalid };
  const receipts = await log.store.list({
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
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
${textField('since', 'From (UTC, e.g. 2026-11-27T09:00)', search.since)}
${textField('until', 'Until (UTC)', search.until)}
<div class="field"><label for="filter-outcome">Outcome</label><select id="filter-outcome" name="outcome">${options}</select></div>
<div class="field actions"><button type="submit" class="allow">Search</button></div>
</form>`;
}

export function receiptsBody(
  consolePath: string,
  search: ReceiptSearch,
  found: { receipts: Receipt[]; next?: string; invalid?: string[] },
): SafeHtml {
  const nextQuery = new URLSearchParams();
  for (const name of FILTERS) if (search[name]) nextQuery.set(name, search[name]!);
  if (found.next) nextQuery.set('before', found.next);
  const example = '2026-11-27 or 2026-11-27T09:00 (UTC), or with an offset';
  const invalid = found.invalid?.length
    ? html`<p role="alert">${found.invalid.join(' and ')}: not a time. Write it as ${example}.</p>`
    : '';
  return html`${searchForm(consolePath, search)}
${invalid}
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

/** What an action receipt records (an approval decided or expired, a console action); nothing for a call. */
function actionRows(receipt: Receipt, row: (label: string, value: SafeHtml | string | number | null) => SafeHtml): SafeHtml {
  const action = receipt.action;
  if (!action) return html``;
  if (action.kind === 'approval') {
    return html`${row('Action', `approval ${action.decision}`)}${row('Approval', html`<code>${action.approval}</code>`)}${row(
      'Approver',
      action.approver,
    )}`;
  }
  return html`${row('Action', `console: ${action.action}`)}${row('Operator', action.operator)}${row('Target', action.target)}`;
}

/** The receipt's inclusion proof and the checkpoint that covers it, and whether they check out here. */
function proofSection(receipt: Receipt, proof: AdminReceiptProof | undefined): SafeHtml {
  if (!proof) {
    return html`<h2>Inclusion proof</h2><p class="hint">No signed checkpoint covers ${receipt.id} yet.</p>`;
  }
  const holds = receiptProofHolds(proof);
  return html`<h2>Inclusion proof</h2>
<p>${holds ? badge('proof verified', 'good') : badge('proof does not verify', 'bad')} ${receipt.id} is leaf ${receipt.index} of the tree of
${proof.checkpoint.treeSize} receipts that the checkpoint below signs: its leaf hash, hashed with the path below, gives the signed root.</p>
<dl>
<dt>Leaf hash</dt><dd><code>${proof.leafHash}</code></dd>
<dt>Inclusion path (leaf level first)</dt><dd>${
    proof.inclusionPath.length === 0
      ? 'none: the receipt is the whole tree'
      : html`<ol>${proof.inclusionPath.map((hash) => html`<li><code>${hash}</code></li>`)}</ol>`
  }</dd>
<dt>Verifier key</dt><dd><code>${proof.checkpoint.verifierKey}</code></dd>
</dl>
<h3>Signed checkpoint</h3>
<pre>${proof.checkpoint.note}</pre>
<p class="hint">The same proof, checked on your machine: <code>gateway receipts prove ${receipt.id}</code>.</p>`;
}

export function receiptBody(consolePath: string, receipt: Receipt, proof: AdminReceiptProof | undefined): SafeHtml {
  const row = (label: string, value: SafeHtml | string | number | null) => html`<dt>${label}</dt><dd>${value ?? 'none'}</dd>`;
  return html`<dl>
${row('Time', receipt.time)}
${actionRows(receipt, row)}
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
${receipt.approval === undefined ? '' : row('Ran on approval', html`<code>${receipt.approval}</code>`)}
${row('Upstream status', receipt.upstreamStatus)}
${row('Duration', `${receipt.durationMs} ms`)}
${row('Arguments digest', html`<code>${receipt.argumentsDigest}</code>`)}
${row('Result digest', receipt.resultDigest ? html`<code>${receipt.resultDigest}</code>` : null)}
${receipt.arguments === undefined ? '' : row('Arguments', html`<code>${JSON.stringify(receipt.arguments)}</code>`)}
</dl>
${proofSection(receipt, proof)}
<p><a href="${consolePath}/receipts">Back to the search</a></p>`;
}
