/**
 * The Sessions page: every open session (person, client, tools, logins, time left) with a Revoke form, and the
 * sessions that ended. Revoking goes through the same session store as `gateway sessions revoke`, so /mcp
 * refuses the session's token at once.
 */
import type { AdminSession } from '@gateway/core';
import type { AdminPluginOptions } from '../admin/options.js';
import { sessionView } from '../admin/sessions.js';
import { badge, html, joinHtml, postForm, table, type SafeHtml } from '../views/index.js';
import { timeLeft } from './layout.js';

type SessionsInput = Pick<AdminPluginOptions, 'sessions' | 'registry'>;

/** Tool name → fingerprint of every tool served now (what the admin API compares approvals with). */
function publishedFingerprints(input: SessionsInput): Map<string, string> {
  return new Map([...input.registry.snapshot().tools].map(([name, tool]) => [name, tool.entry.fingerprint]));
}

export async function sessionViews(input: SessionsInput, now = Date.now()): Promise<AdminSession[]> {
  if (!input.sessions) return [];
  const published = publishedFingerprints(input);
  return (await input.sessions.listSessions()).map((session) => sessionView(session, published, now)).reverse();
}

function toolsCell(session: AdminSession): SafeHtml {
  if (session.tools.length === 0) return html`<span class="hint">none</span>`;
  return joinHtml(
    session.tools.map((tool) =>
      tool.stale ? html`<code>${tool.name}</code> ${badge('changed', 'warn')}` : html`<code>${tool.name}</code>`,
    ),
    ', ',
  );
}

export interface SessionsPageInput {
  sessions: readonly AdminSession[];
  csrfToken: string;
  /** Where the console is: `${basePath}/console`. */
  consolePath: string;
  notice?: string;
}

export function sessionsBody({ sessions, csrfToken, consolePath, notice }: SessionsPageInput, now = Date.now()): SafeHtml {
  const open = sessions.filter((session) => session.state === 'open');
  const ended = sessions.filter((session) => session.state !== 'open').slice(0, 50);
  return html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
${table(
  'Open sessions, newest first',
  [
    { label: 'Session', cell: (session: AdminSession) => html`<code>${session.id}</code>` },
    { label: 'Person', cell: (session) => session.person },
    { label: 'Client', cell: (session) => session.client },
    { label: 'Tools', cell: toolsCell },
    { label: 'Logins', cell: (session) => (session.logins.length > 0 ? session.logins.join(', ') : 'none') },
    { label: 'Time left', cell: (session) => timeLeft(session.expiresAt, now) },
    {
      label: 'Action',
      cell: (session) =>
        postForm(
          `${consolePath}/sessions/${encodeURIComponent(session.id)}/revoke`,
          csrfToken,
          html`<button type="submit" class="deny" aria-label="Revoke ${session.id} (${session.person}, ${session.client})">Revoke</button>`,
          { className: 'inline' },
        ),
    },
  ],
  open,
  'No session is open.',
)}
${table(
  'Ended sessions (the 50 newest)',
  [
    { label: 'Session', cell: (session: AdminSession) => html`<code>${session.id}</code>` },
    { label: 'Person', cell: (session) => session.person },
    { label: 'Client', cell: (session) => session.client },
    { label: 'State', cell: (session) => badge(session.state, session.state === 'revoked' ? 'bad' : 'plain') },
    { label: 'Ended', cell: (session) => session.revokedAt ?? session.expiresAt },
  ],
  ended,
  'No session has ended yet.',
)}`;
}
