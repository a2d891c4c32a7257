/**
 * The approval page (docs/approvals.md › At call time): what a person reads before approving or denying one call,
 * on the shared views module (no script, CSP, the form carries the browser session's CSRF token).
 */
import { badge, html, postForm, renderPage, type BadgeTone, type RenderedPage } from '../views/index.js';
import type { ApprovalRecord, ApprovalStatus } from './ports.js';

const STATUS_WORDS: Record<ApprovalStatus, [string, BadgeTone]> = {
  waiting: ['waiting for a decision', 'warn'],
  approved: ['approved: the call may run once', 'good'],
  denied: ['denied: the call will not run', 'bad'],
  used: ['approved and used: the call ran', 'good'],
  expired: ['expired: the call must ask again', 'plain'],
};

function approversText(approvers: string[] | null): string {
  if (approvers === null) return 'the person of the session';
  return approvers.map((name) => (name === '@operators' ? 'anyone with the operator role' : name)).join(', ');
}

export function approvalPage(record: ApprovalRecord, input: { csrfToken: string; signedInAs: string }): RenderedPage {
  const [statusText, tone] = STATUS_WORDS[record.status];
  const form =
    record.status === 'waiting'
      ? postForm(
          record.id,
          input.csrfToken,
          html`<div class="actions">
<button type="submit" name="decision" value="approve" class="allow">Approve this call</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</div>`,
        )
      : '';
  return renderPage(
    `Approve a call of ${record.tool}`,
    html`<h1>Approve a call of ${record.tool}?</h1>
<p>${badge(statusText, tone)}</p>
<dl>
<dt>Tool</dt><dd><code>${record.tool}</code> of source <code>${record.source}</code></dd>
<dt>What it calls</dt><dd><code>${record.target}</code></dd>
<dt>Session</dt><dd>${record.personName} with <strong>${record.clientName}</strong> (<code>${record.sessionId}</code>)</dd>
<dt>Who may decide</dt><dd>${approversText(record.approvers)}</dd>
<dt>Expires</dt><dd><time datetime="${new Date(record.expiresAt).toISOString()}">${new Date(record.expiresAt).toISOString()}</time></dd>
${record.decidedBy ? html`<dt>Decided by</dt><dd>${record.decidedBy}</dd>` : ''}
</dl>
<h2>Arguments</h2>
<pre>${record.argumentsPreview}</pre>
${form}
<p class="hint">Signed in as ${input.signedInAs}. Approving lets this one call, with exactly these arguments, run once.</p>`,
  );
}
