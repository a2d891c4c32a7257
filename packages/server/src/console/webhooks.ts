/**
 * The Webhooks page: each configured endpoint with its state (active, paused, disabled), what waits, the most
 * recent deliveries with their attempts, a Resume form for a paused or disabled endpoint (the same resume as
 * `gateway webhooks resume`) and a Replay form (the same replay as `gateway webhooks replay`: the failed events, or
 * every event from a sequence on, sent again in order). Endpoints themselves are configured in gateway.yaml,
 * reviewed in git.
 */
import type { AdminWebhookEndpoint } from '@gateway/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { FORM_BODY, formOf } from '../authorization/oauth/http.js';
import { pathParameters, QUERY_TEXT } from '../http/route-schemas.js';
import type { OutboxEvent, ReplaySelection } from '../outbox/ports.js';
import type { ReceiptLog } from '../receipts/log.js';
import type { Webhooks } from '../webhooks/service.js';
import { webhookSummaries } from '../webhooks/summaries.js';
import { badge, html, postForm, sendPage, table, type SafeHtml } from '../views/index.js';
import { viewerOf, type ConsoleViewer } from './access.js';
import { receiptConsoleAction } from './actions.js';
import type { ShowConsolePage } from './layout.js';

const RECENT_DELIVERIES = 10;

export interface EndpointView {
  summary: AdminWebhookEndpoint;
  /** The newest events first. */
  recent: OutboxEvent[];
}

export async function endpointViews(webhooks: Webhooks | undefined): Promise<EndpointView[]> {
  if (!webhooks) return [];
  const views: EndpointView[] = [];
  for (const summary of await webhookSummaries(webhooks)) {
    const fromSequence = Math.max(1, summary.nextSequence - RECENT_DELIVERIES);
    const recent = await webhooks.outbox.store.events(summary.name, { fromSequence, limit: RECENT_DELIVERIES });
    views.push({ summary, recent: recent.reverse() });
  }
  return views;
}

function stateBadge(summary: AdminWebhookEndpoint): SafeHtml {
  return badge(summary.state, summary.state === 'active' ? 'good' : summary.state === 'paused' ? 'warn' : 'bad');
}

/** Replay: the failed events, or every event from a sequence on (at least 1, at most the last one sent). */
function replayForm(summary: AdminWebhookEndpoint, consolePath: string, csrfToken: string): SafeHtml {
  const last = summary.nextSequence - 1;
  if (last < 1) return html``;
  const id = `replay-from-${summary.name}`;
  return postForm(
    `${consolePath}/webhooks/${encodeURIComponent(summary.name)}/replay`,
    csrfToken,
    html`<fieldset><legend>Send events to ${summary.name} again, in order</legend>
<div class="field"><label for="${id}">From event # (1 to ${last}; empty: the failed ones)</label>
<input type="number" id="${id}" name="from" min="1" max="${last}" inputmode="numeric"></div>
<button type="submit">Replay</button></fieldset>`,
  );
}

function endpointSection(view: EndpointView, consolePath: string, csrfToken: string): SafeHtml {
  const { summary } = view;
  const stopped = summary.paused ?? summary.disabled;
  return html`<section aria-labelledby="endpoint-${summary.name}">
<h2 id="endpoint-${summary.name}">${summary.name} ${stateBadge(summary)}</h2>
<dl>
<dt>URL</dt><dd><code>${summary.url}</code></dd>
<dt>Events</dt><dd>${summary.types.join(', ')}</dd>
<dt>Counts</dt><dd>${summary.counts.delivered} delivered, ${summary.counts.pending} pending, ${summary.counts.failed} failed</dd>
${stopped ? html`<dt>Stopped</dt><dd>at ${stopped.at}: ${stopped.reason ?? 'no reason recorded'}</dd>` : ''}
</dl>
${
  stopped
    ? postForm(
        `${consolePath}/webhooks/${encodeURIComponent(summary.name)}/resume`,
        csrfToken,
        html`<button type="submit" class="allow">Resume ${summary.name}</button>`,
      )
    : ''
}
${replayForm(summary, consolePath, csrfToken)}
${table(
  `Recent deliveries to ${summary.name}, newest first`,
  [
    { label: 'Event', cell: (event: OutboxEvent) => html`#${event.sequence} <code>${event.eventId}</code>` },
    { label: 'Receipt', cell: (event) => event.receiptId ?? 'none' },
    {
      label: 'Status',
      cell: (event) => badge(event.status, event.status === 'delivered' ? 'good' : event.status === 'pending' ? 'warn' : 'bad'),
    },
    { label: 'Attempts', cell: (event) => String(event.attempts) },
    {
      label: 'Last attempt',
      cell: (event) => {
        if (!event.lastAttemptAt) return 'none yet';
        const status = event.lastStatus === null ? '' : ` (HTTP ${event.lastStatus})`;
        return `${event.lastAttemptAt}${status}${event.lastError ? `: ${event.lastError}` : ''}`;
      },
    },
  ],
  view.recent,
  'Nothing has been sent to this endpoint yet.',
)}
</section>`;
}

export function webhooksBody(views: readonly EndpointView[], consolePath: string, csrfToken: string, notice?: string): SafeHtml {
  if (views.length === 0) return html`<p class="hint">No webhook endpoint is configured (gateway.yaml › webhooks).</p>`;
  return html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
${views.map((view) => endpointSection(view, consolePath, csrfToken))}`;
}

/** What the Replay form asks for: `from` a sequence (a whole number from 1), or the failed events when empty. */
export function replaySelectionOf(from: string | undefined): ReplaySelection | 'invalid' {
  const text = from?.trim() ?? '';
  if (text === '') return { failed: true };
  if (!/^[1-9][0-9]{0,15}$/.test(text)) return 'invalid';
  return { fromSequence: Number(text) };
}

/** `GET /console/webhooks`, and its Resume and Replay forms' POSTs, behind the console's access hook. */
export function registerWebhooksPage(
  app: FastifyInstance,
  context: { show: ShowConsolePage; consolePath: string; webhooks: Webhooks | undefined; receipts: ReceiptLog | undefined },
): void {
  const { show, consolePath, webhooks, receipts } = context;
  const querystring = { type: 'object', properties: { resumed: QUERY_TEXT, replayed: QUERY_TEXT } } as const;
  const notFound = (reply: FastifyReply, viewer: ConsoleViewer, endpoint: string) =>
    sendPage(
      reply,
      show('No such endpoint', '/webhooks', viewer.person.name, html`<p role="alert">There is no webhook endpoint ${endpoint}.</p>`, 404),
    );

  app.get('/webhooks', { schema: { querystring } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const { resumed, replayed } = request.query as { resumed?: string; replayed?: string };
    const views = await endpointViews(webhooks);
    // Said only of an endpoint the page shows: a link cannot put words of its own on the console.
    const isShown = (name: string | undefined) => name !== undefined && views.some((view) => view.summary.name === name);
    const notice = isShown(resumed)
      ? `Delivery to ${resumed} goes on.`
      : isShown(replayed)
        ? `Events to ${replayed} are sent again, in order.`
        : undefined;
    const body = webhooksBody(views, consolePath, viewer.csrfToken, notice);
    return sendPage(reply, show('Webhooks', '/webhooks', viewer.person.name, body));
  });

  app.post('/webhooks/:endpoint/resume', { schema: { params: pathParameters('endpoint'), body: FORM_BODY } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const { endpoint } = request.params as { endpoint: string };
    if (!webhooks?.endpoints.has(endpoint)) return notFound(reply, viewer, endpoint);
    await webhooks.resume(endpoint);
    await receiptConsoleAction(receipts, viewer.person, { action: 'webhook.resume', target: endpoint });
    return reply
      .status(303)
      .header('location', `${consolePath}/webhooks?resumed=${encodeURIComponent(endpoint)}`)
      .send();
  });

  app.post('/webhooks/:endpoint/replay', { schema: { params: pathParameters('endpoint'), body: FORM_BODY } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const { endpoint } = request.params as { endpoint: string };
    if (!webhooks?.endpoints.has(endpoint)) return notFound(reply, viewer, endpoint);
    const selection = replaySelectionOf(formOf(request).get('from') ?? undefined);
    if (selection === 'invalid') {
      const message = html`<p role="alert">From event # must be a whole number from 1, or empty for the failed events:
nothing was replayed.</p>`;
      return sendPage(reply, show('Nothing replayed', '/webhooks', viewer.person.name, message, 400));
    }
    await webhooks.replay(endpoint, selection);
    const target = 'failed' in selection ? `${endpoint} failed` : `${endpoint} from ${selection.fromSequence}`;
    await receiptConsoleAction(receipts, viewer.person, { action: 'webhook.replay', target });
    return reply
      .status(303)
      .header('location', `${consolePath}/webhooks?replayed=${encodeURIComponent(endpoint)}`)
      .send();
  });
}
