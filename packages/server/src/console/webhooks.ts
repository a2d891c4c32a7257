/**
 * The Webhooks page: each configured endpoint with its state (active, paused, disabled), what waits, the most
 * recent deliveries with their attempts, and a Resume form for a paused or disabled endpoint (the same resume
 * as `gateway webhooks resume`). Endpoints themselves are configured in gateway.yaml, reviewed in git.
 */
import type { AdminWebhookEndpoint } from '@gateway/core';
import type { OutboxEvent } from '../outbox/ports.js';
import type { Webhooks } from '../webhooks/service.js';
import { webhookSummaries } from '../webhooks/summaries.js';
import { badge, html, postForm, table, type SafeHtml } from '../views/index.js';

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
