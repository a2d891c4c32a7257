/**
 * The Sources page: each source of the lock with its in-use and proposed publication, the tools served (each
 * with its approval choice and, when drift blocks it, why), the operations not offered, and what the drift check
 * found. Publishing stays the git and CLI step it is: the page says which command to run, it signs nothing.
 */
import {
  compareText,
  inUsePublication,
  proposedPublication,
  type DriftSourceReport,
  type LockedEntry,
  type LockedSource,
} from '@gateway/core';
import type { AdminPluginOptions } from '../admin/options.js';
import { publicationsOf } from '../admin/status.js';
import { badge, html, joinHtml, table, type SafeHtml } from '../views/index.js';

type SourcesInput = Pick<AdminPluginOptions, 'registry' | 'drift'>;

function approvalCell(entry: LockedEntry): SafeHtml {
  if (entry.approval !== 'each-call') return html`<span class="hint">none</span>`;
  const who = entry.approvers && entry.approvers.length > 0 ? entry.approvers.join(', ') : "the session's own person";
  return html`${badge('each-call', 'warn')} <span class="hint">approved by ${who}</span>`;
}

function toolTable(source: LockedSource, input: SourcesInput): SafeHtml {
  const publication = inUsePublication(source);
  const entries = (publication?.operations as LockedEntry[] | undefined)?.filter((entry) => entry.selected) ?? [];
  return table(
    `Tools of ${source.name} in use`,
    [
      { label: 'Tool', cell: (entry: LockedEntry) => html`<code>${entry.tool}</code>` },
      { label: 'Calls', cell: (entry) => ('method' in entry ? `${entry.method.toUpperCase()} ${entry.path}` : `tool ${entry.name}`) },
      { label: 'Approval', cell: approvalCell },
      {
        label: 'State',
        cell: (entry) => {
          const blocked = input.registry.blockedReason(source.name, entry.tool);
          return blocked === undefined ? badge('served', 'good') : html`${badge('blocked', 'bad')} ${blocked}`;
        },
      },
    ],
    entries,
    'No publication of this source is in use: it serves no tool.',
  );
}

function driftSection(report: DriftSourceReport | undefined): SafeHtml {
  if (!report) return html`<p class="hint">Drift checks are off for this source.</p>`;
  const tone = report.status === 'in-sync' ? 'good' : report.status === 'error' ? 'bad' : 'warn';
  const proposal = report.proposal;
  const checked = report.checkedAt ? html` <span class="hint">checked ${report.checkedAt}</span>` : '';
  return html`<p>Drift: ${badge(report.status, tone)}${checked}</p>
${report.error ? html`<p class="error">${report.error.message}</p>` : ''}
${
  report.blockedTools.length > 0
    ? html`<p>Blocked until a new publication is reviewed: ${joinHtml(
        report.blockedTools.map((blocked) => `${blocked.tool} (${blocked.reason})`),
        '; ',
      )}</p>`
    : ''
}
${
  proposal
    ? html`<div class="changes"><p>A drift proposal${proposal.id ? html` (<code>${proposal.id}</code>)` : ''} waits for review:</p>
<ul>${(proposal.summary ?? [...proposal.changed, ...proposal.removed, ...proposal.added]).map((line) => html`<li>${line}</li>`)}</ul></div>`
    : ''
}`;
}

function sourceSection(
  source: LockedSource,
  input: SourcesInput,
  counts: ReturnType<typeof publicationsOf>,
  drift: DriftSourceReport[],
): SafeHtml {
  const inUse = inUsePublication(source);
  const proposed = proposedPublication(source);
  const served = counts.find((publication) => publication.source === source.name);
  const notOffered = inUse?.notOffered ?? [];
  return html`<section aria-labelledby="source-${source.name}">
<h2 id="source-${source.name}">${source.name} <span class="hint">(${source.kind})</span></h2>
<dl>
<dt>In use</dt><dd>${
    inUse
      ? html`<code>${inUse.id}</code>: ${served?.toolCount ?? 0} tool(s) served${
          served && served.blockedCount > 0 ? html`, ${served.blockedCount} blocked` : ''
        }${inUse.publishedBy ? html`, published by ${inUse.publishedBy}${inUse.publishedAt ? ` at ${inUse.publishedAt}` : ''}` : ''}`
      : 'none'
  }</dd>
<dt>Proposed</dt><dd>${
    proposed
      ? html`<code>${proposed.id}</code>: ${proposed.toolCount} tool(s) selected. Review and publish it with
<code>gateway review ${source.name}</code> and <code>gateway publish ${source.name}</code>, then commit tools.lock.`
      : 'none'
  }</dd>
</dl>
${driftSection(drift.find((report) => report.source === source.name))}
${toolTable(source, input)}
${
  notOffered.length > 0
    ? html`<details><summary>${notOffered.length} operation(s) not offered</summary>
<ul>${notOffered.map(
        (entry) => html`<li><code>${entry.tool}</code> (${entry.operation}): ${entry.reason?.message ?? entry.status}</li>`,
      )}</ul></details>`
    : ''
}
</section>`;
}

export function sourcesBody(input: SourcesInput): SafeHtml {
  const lock = input.registry.snapshot().lock;
  const sources = [...(lock?.sources ?? [])].sort((a, b) => compareText(a.name, b.name));
  const counts = publicationsOf(input.registry);
  const drift = input.drift?.report() ?? [];
  if (sources.length === 0) return html`<p class="hint">tools.lock has no source yet.</p>`;
  return html`<p class="hint">What is published is changed in git (tools.lock, reviewed in a pull request) and with the
<code>gateway</code> command; this page shows it.</p>
${sources.map((source) => sourceSection(source, input, counts, drift))}`;
}
