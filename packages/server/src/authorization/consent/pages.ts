import { randomBytes } from 'node:crypto';
import type { ConsentTool } from './consent-tool.js';
import type { LoginSummary } from '../../credentials/index.js';
import { compareText, escapeHiddenCharacters, hasHiddenCharacters } from '@gateway/core';

/**
 * Server-rendered pages of the sign-in and consent flow. No external assets (fonts, scripts, images):
 * the page works offline, leaks nothing to third parties, and a strict CSP can forbid everything else.
 */

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/**
 * Tool text (a name, title or description from a lock) for the page: hidden characters (invisible, tag,
 * bidirectional controls; core's tool-text) shown as `\u{E0049}`, never raw, then escaped for HTML. Import makes
 * a tool holding any unsupported, so only a lock written before that rule can bring one here: the page shows it
 * escaped and flags it (`hiddenTextMark`). Form values (the checkbox's tool name) stay exact: use escapeHtml there.
 */
export function escapeToolText(text: string, options: { singleLine?: boolean } = {}): string {
  return escapeHtml(escapeHiddenCharacters(text, options));
}

/** The flag beside a tool whose name, title or description holds hidden characters; '' when none does. */
function hiddenTextMark(tool: ConsentTool): string {
  const texts = [tool.name, tool.title ?? '', tool.description];
  return texts.some(hasHiddenCharacters) ? '<span class="mark hidden-text">Hidden characters</span>' : '';
}

export interface RenderedPage {
  status: number;
  html: string;
  headers: Record<string, string>;
}

/**
 * `default-src 'none'` with nonce'd inline style and script; `frame-ancestors 'none'` forbids framing
 * (clickjacking the Allow button; MCP Security Best Practices › Confused Deputy). `form-action` lists
 * this gateway and, on the consent page, where the decision redirects (browsers check redirects of a
 * form submission against it).
 */
function securityHeaders(nonce: string, formTargets: string[]): Record<string, string> {
  const csp = [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    `form-action 'self'${formTargets.map((target) => ` ${target}`).join('')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': csp,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
}

const STYLE =
  `
:root { color-scheme: light; --ink: #1b1f24; --muted: #4a5360; --line: #c9ced6; --accent: #0b4f8a; --accent-ink: #ffffff;
  --warn-bg: #fff4d6; --warn-ink: #5c3d00; --ro-bg: #e2f3e7; --ro-ink: #0b5126; --de-bg: #fbe6e6; --de-ink: #8a1414;
  --wr-bg: #e6ecfa; --wr-ink: #1d3a7a; --error: #a01010; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #f4f6f8; }
main { max-width: 46rem; margin: 2rem auto; padding: 1.5rem 2rem; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
h1 { font-size: 1.5rem; line-height: 1.3; margin: 0 0 1rem; }
h2 { font-size: 1.1rem; margin: 0; }
p { margin: 0.5rem 0; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0 0 1rem; }
dt { font-weight: 600; color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; overflow-wrap: anywhere; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 1rem 0; padding: 0.75rem 1rem 1rem; }
legend { font-weight: 700; padding: 0 0.25rem; }
fieldset fieldset { margin: 0.75rem 0 0; }
.hint { color: var(--muted); font-size: 0.9rem; }
.option { display: grid; grid-template-columns: auto 1fr; gap: 0.25rem 0.6rem; align-items: start; padding: 0.5rem 0; ` +
  `border-top: 1px solid #e6e9ee; }
.option:first-of-type { border-top: 0; }
.option input { margin-top: 0.3rem; width: 1.15rem; height: 1.15rem; }
.option label { font-weight: 600; }
.option .details { grid-column: 2; }
.tool-title { font-weight: 700; }
.tool-description { margin: 0.35rem 0 0.25rem; padding-left: 0.6rem; border-left: 3px solid #e0e4ea; font-weight: 400; ` +
  `color: var(--ink); white-space: pre-line; }
.tool-description p { margin: 0 0 0.35rem; }
.mark.changed { background: var(--warn-bg); color: var(--warn-ink); }
.notice { background: #e8f0fb; color: #0d2f57; border-left: 4px solid var(--accent); padding: 0.6rem 0.9rem; border-radius: 4px; ` +
  `margin: 1rem 0; }
.mark { display: inline-block; font-size: 0.8rem; font-weight: 700; padding: 0 0.45rem; border-radius: 999px; margin-left: 0.35rem; }
.mark.read-only { background: var(--ro-bg); color: var(--ro-ink); }
.mark.writes { background: var(--wr-bg); color: var(--wr-ink); }
.changes { background: var(--warn-bg); color: var(--warn-ink); border-left: 4px solid #b07800; padding: 0.4rem 0.75rem; ` +
  `border-radius: 4px; margin: 0.35rem 0; }
.changes ul { margin: 0.25rem 0 0; padding-left: 1.25rem; }
.changes li { overflow-wrap: anywhere; }
details summary { cursor: pointer; }
.mark.destructive { background: var(--de-bg); color: var(--de-ink); }
.mark.blocked, .blocked-reason { background: var(--de-bg); color: var(--de-ink); }
.blocked-reason { margin: 0.25rem 0; padding: 0.2rem 0.5rem; border-radius: 4px; }
.mark.hidden-text { background: var(--de-bg); color: var(--de-ink); }
.warning { background: var(--warn-bg); color: var(--warn-ink); border-left: 4px solid #b07800; padding: 0.6rem 0.9rem; ` +
  `border-radius: 4px; margin: 1rem 0; }
.error { color: var(--error); font-weight: 600; }
.actions { display: flex; gap: 1rem; flex-wrap: wrap; margin-top: 1.25rem; }
button, .button { font: inherit; font-weight: 700; min-width: 9rem; padding: 0.65rem 1.4rem; border-radius: 6px; cursor: pointer; ` +
  `border: 2px solid var(--accent); text-align: center; text-decoration: none; }
button.allow, .button.primary { background: var(--accent); color: var(--accent-ink); }
button.deny, .button.secondary { background: #fff; color: var(--accent); }
input[type=text], input[type=password] { font: inherit; width: 100%; max-width: 22rem; padding: 0.5rem; border: 1px solid #6b7380; ` +
  `border-radius: 4px; }
.field { margin: 0.75rem 0; }
.field label { display: block; font-weight: 600; margin-bottom: 0.25rem; }
:focus-visible { outline: 3px solid #1a5fb4; outline-offset: 2px; }
@media (max-width: 34rem) {
  main { margin: 0; border: 0; border-radius: 0; padding: 1rem; }
  dl { grid-template-columns: 1fr; }
  dt { margin-top: 0.5rem; }
  .actions { flex-direction: column; }
  button, .button { width: 100%; }
}
`;

function page(title: string, body: string, options: { status?: number; formTargets?: string[]; script?: string } = {}): RenderedPage {
  const nonce = randomBytes(16).toString('base64');
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
${options.script ? `<script nonce="${nonce}">${options.script}</script>` : ''}
</body>
</html>
`;
  return { status: options.status ?? 200, html, headers: securityHeaders(nonce, options.formTargets ?? []) };
}

/** The gateway's own error page: used when redirecting back would be unsafe (unknown client or redirect URI). */
export function errorPage(title: string, message: string, status = 400): RenderedPage {
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p role="alert">${escapeHtml(message)}</p>
<p class="hint">Nothing was shared with the application. You can close this window.</p>`,
    { status },
  );
}

/** A page that tells the person something went as asked (a linked account). */
export function noticePage(title: string, message: string, status = 200): RenderedPage {
  return page(title, `<h1>${escapeHtml(title)}</h1>\n<p role="status">${escapeHtml(message)}</p>`, { status });
}

export interface ConnectSignInPageInput {
  /** Where the form posts (`<base>/connect/signin`: absolute, as the page is drawn at two paths). */
  action: string;
  csrfToken: string;
  /** The connect page's ticket, carried through the sign-in. */
  ticket: string;
  gateway: string;
  /** The provider whose account is to be linked, and the origin its authorization endpoint is at. */
  label: string;
  providerOrigin: string;
  error?: string;
  name?: string;
  status?: number;
}

/** Sign-in with a local account on the connect page of a per-person login: the person then goes on to link. */
export function connectSignInPage(input: ConnectSignInPageInput): RenderedPage {
  return page(
    'Sign in',
    `<h1>Sign in to ${escapeHtml(input.gateway)}</h1>
<p>Sign in to connect your <strong>${escapeHtml(input.label)}</strong> account. Only you can link it, as yourself.</p>
${input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : ''}
<form method="post" action="${escapeHtml(input.action)}" novalidate>
<input type="hidden" name="csrf_token" value="${escapeHtml(input.csrfToken)}">
<input type="hidden" name="ticket" value="${escapeHtml(input.ticket)}">
<div class="field"><label for="name">Name</label><input type="text" id="name" name="name" autocomplete="username" autocapitalize="none" ` +
      `spellcheck="false" value="${escapeHtml(input.name ?? '')}" required></div>
<div class="field"><label for="password">Password</label><input type="password" id="password" name="password" ` +
      `autocomplete="current-password" required></div>
<div class="actions"><button type="submit" class="allow">Sign in</button></div>
</form>`,
    // The sign-in redirects on to the provider: a form's redirects must be allowed by form-action too.
    { status: input.status ?? 200, formTargets: [input.providerOrigin] },
  );
}

/** A link that connects the person's account for a per-person login the tool uses (it opens in a new tab). */
export interface ConnectLink {
  label: string;
  href: string;
}

/**
 * "Connect <provider>" beside a tool: the linking happens in another tab, so this page, with every choice made
 * on it, stays as it is; an unlinked tool can still be chosen (its calls then ask for linking).
 */
function connectLinksHtml(links: readonly ConnectLink[]): string {
  if (links.length === 0) return '';
  const anchors = links
    .map(
      (link) => `<a class="connect" href="${escapeHtml(link.href)}" target="_blank" rel="noopener">Connect ${escapeHtml(link.label)}</a>`,
    )
    .join(' ');
  return `<p class="hint connect-links">${anchors} <span>(your own account; you can also connect it when a call first needs it)</span></p>`;
}

export interface SignInPageInput {
  requestId: string;
  csrfToken: string;
  gateway: string;
  clientName: string;
  localAccounts: boolean;
  oidc?: { label: string; href: string };
  error?: string;
  name?: string;
  status?: number;
}

export function signInPage(input: SignInPageInput): RenderedPage {
  const local = input.localAccounts
    ? `<form method="post" action="signin" novalidate>
<input type="hidden" name="csrf_token" value="${escapeHtml(input.csrfToken)}">
<input type="hidden" name="request" value="${escapeHtml(input.requestId)}">
<div class="field"><label for="name">Name</label><input type="text" id="name" name="name" autocomplete="username" autocapitalize="none" ` +
      `spellcheck="false" value="${escapeHtml(input.name ?? '')}" required></div>
<div class="field"><label for="password">Password</label><input type="password" id="password" name="password" ` +
      `autocomplete="current-password" required></div>
<div class="actions"><button type="submit" class="allow">Sign in</button></div>
</form>`
    : '';
  const oidc = input.oidc
    ? `<div class="actions"><a class="button ${input.localAccounts ? 'secondary' : 'primary'}" href="${escapeHtml(input.oidc.href)}">` +
      `${escapeHtml(input.oidc.label)}</a></div>`
    : '';
  return page(
    'Sign in',
    `<h1>Sign in to ${escapeHtml(input.gateway)}</h1>
<p><strong>${escapeHtml(input.clientName)}</strong> is asking to use tools on your behalf. Sign in to review the request.</p>
${input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : ''}
${local}
${oidc}`,
    { status: input.status ?? 200 },
  );
}

/**
 * A tool that changed since the person approved it, with what changed in the sentences of `gateway diff`
 * (core's describeToolChanges), or null when the approved version is no longer known.
 */
export interface ReapprovalNote {
  name: string;
  changes: string[] | null;
}

export interface ConsentPageInput {
  requestId: string;
  csrfToken: string;
  gateway: string;
  person: { name: string; email?: string };
  client: { name: string; clientId: string; registration: string };
  redirectHost: string;
  redirectFormTarget: string;
  isLocalhostOnly: boolean;
  tools: ConsentTool[];
  logins: LoginSummary[];
  lifetimes: Array<{ seconds: number; label: string }>;
  /**
   * What is ticked when the page is drawn: the person's own choices when a submit was refused (nothing
   * they picked is lost), or what the application asked to have approved again (`scope`, docs/authorization.md).
   */
  selected?: { tools: readonly string[]; logins: readonly string[]; lifetime?: number };
  /** Tools the application asks to have approved again because they changed since the person approved them. */
  reapproval?: readonly ReapprovalNote[];
  /** Per tool name: the per-person logins it uses that the person has not connected yet. */
  connect?: ReadonlyMap<string, readonly ConnectLink[]>;
  error?: string;
  status?: number;
}

/**
 * The description as paragraphs (blank lines separate them). The importer writes "summary, blank line,
 * description" and the summary is usually the title too: a first paragraph equal to the title is dropped,
 * so the page does not run the title into the description.
 */
function descriptionParagraphs(tool: ConsentTool): string[] {
  const paragraphs = tool.description
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.trim())
    .filter((paragraph) => paragraph !== '');
  if (tool.title && paragraphs[0] === tool.title.trim()) paragraphs.shift();
  return paragraphs;
}

const oneLine = { singleLine: true };

/** What calling the tool reaches, as one line. */
function toolTarget(tool: ConsentTool): string {
  const target = tool.target;
  switch (target.kind) {
    case 'http':
      return `Calls <code>${escapeHtml(target.method)} ${escapeToolText(target.path, oneLine)}</code>`;
    case 'mcp':
      return (
        `Calls the tool <code>${escapeToolText(target.tool, oneLine)}</code> ` +
        `of the MCP server <code>${escapeHtml(target.server)}</code>`
      );
    default: {
      const unreachable: never = target;
      return unreachable;
    }
  }
}

/** What changed since the person approved the tool; shown beside it, never hidden behind a toggle. */
function changeNote(note: ReapprovalNote): string {
  if (note.changes === null) {
    return '<div class="changes"><p><strong>Changed since you approved it</strong> (the earlier version is no longer published).</p></div>';
  }
  const items = note.changes.map((change) => `<li>${escapeToolText(change, oneLine)}</li>`).join('');
  return `<div class="changes"><p><strong>Changed since you approved it:</strong></p><ul>${items}</ul></div>`;
}

function toolOption(
  tool: ConsentTool,
  index: number,
  isChecked: boolean,
  change: ReapprovalNote | undefined,
  connect: readonly ConnectLink[] = [],
): string {
  const id = `tool-${index}`;
  // A tool blocked by drift is shown, with why, but cannot be ticked (and a disabled box is never submitted).
  const isBlocked = tool.blocked !== undefined;
  const marks = [
    tool.readOnly ? '<span class="mark read-only">Read-only</span>' : '',
    tool.destructive ? '<span class="mark destructive">Destructive</span>' : '',
    // Neither read-only nor destructive: it changes something (MCP Tools › ToolAnnotations).
    !tool.readOnly && !tool.destructive ? '<span class="mark writes">Writes</span>' : '',
    change ? '<span class="mark changed">Changed</span>' : '',
    isBlocked ? '<span class="mark blocked">Unavailable</span>' : '',
    hiddenTextMark(tool),
  ].join('');
  const hasTitle = tool.title !== null && tool.title !== '' && tool.title !== tool.name;
  const paragraphs = descriptionParagraphs(tool);
  // data-logins: the logins this tool can use, for the inline script that ticks them with the tool.
  return (
    `<div class="option">
<input type="checkbox" name="tool" value="${escapeHtml(tool.name)}" id="${id}" aria-describedby="${id}-details" ` +
    `data-logins="${escapeHtml(tool.logins.join(' '))}"${isBlocked ? ' disabled' : isChecked ? ' checked' : ''}>
<label for="${id}"><span class="tool-title">${escapeToolText(hasTitle ? tool.title! : tool.name, oneLine)}</span>${marks}</label>
<div class="details" id="${id}-details">
${hasTitle ? `<p class="hint">Tool name <code>${escapeToolText(tool.name, oneLine)}</code></p>` : ''}
<p class="hint target">${toolTarget(tool)}</p>
${connectLinksHtml(connect)}
${
  paragraphs.length
    ? `<div class="tool-description">${paragraphs.map((paragraph) => `<p>${escapeToolText(paragraph)}</p>`).join('')}</div>`
    : ''
}
${
  hiddenTextMark(tool)
    ? '<p class="hint">This tool\'s text holds characters a screen does not show (shown here as <code>\\u{…}</code>) ' +
      'but an AI model reads.</p>'
    : ''
}
${change ? changeNote(change) : ''}
${isBlocked ? `<p class="blocked-reason">Cannot be approved now: ${escapeHtml(tool.blocked!)}.</p>` : ''}
<details class="hint"><summary>Fingerprint</summary><code>${escapeHtml(tool.fingerprint)}</code></details>
</div>
</div>`
  );
}

export function consentPage(input: ConsentPageInput): RenderedPage {
  const bySource = new Map<string, ConsentTool[]>();
  for (const tool of input.tools) bySource.set(tool.source, [...(bySource.get(tool.source) ?? []), tool]);
  const selectedTools = new Set(input.selected?.tools ?? []);
  const selectedLogins = new Set(input.selected?.logins ?? []);
  const reapproval = new Map((input.reapproval ?? []).map((note) => [note.name, note] as const));
  let index = 0;
  const toolGroups = [...bySource.entries()]
    .sort(([a], [b]) => compareText(a, b))
    .map(
      ([source, tools]) => `<fieldset>
<legend>Source <code>${escapeHtml(source)}</code></legend>
${tools
  .map((tool) => toolOption(tool, index++, selectedTools.has(tool.name), reapproval.get(tool.name), input.connect?.get(tool.name)))
  .join('\n')}
</fieldset>`,
    )
    .join('\n');
  const usedBy = (login: LoginSummary): string[] => input.tools.filter((tool) => tool.logins.includes(login.id)).map((tool) => tool.name);
  const logins = input.logins.length
    ? input.logins
        .map((login, position) => {
          const id = `login-${position}`;
          return (
            `<div class="option">
<input type="checkbox" name="login" value="${escapeHtml(login.id)}" id="${id}" ` +
            `aria-describedby="${id}-details"${selectedLogins.has(login.id) ? ' checked' : ''}>
<label for="${id}"><code>${escapeHtml(login.id)}</code></label>
<div class="details hint" id="${id}-details">${escapeHtml(login.type)} credential of <code>${escapeHtml(login.source)}</code>; ` +
            `used by ${escapeHtml(usedBy(login).join(', ') || 'no listed tool')}</div>
</div>`
          );
        })
        .join('\n')
    : '<p class="hint">None of these tools needs a login.</p>';
  const chosenLifetime = input.lifetimes.some((lifetime) => lifetime.seconds === input.selected?.lifetime)
    ? input.selected!.lifetime
    : input.lifetimes[0]?.seconds;
  const lifetimes = input.lifetimes
    .map(
      (lifetime, position) =>
        `<div class="option">
<input type="radio" name="lifetime" value="${lifetime.seconds}" id="lifetime-${position}"` +
        `${lifetime.seconds === chosenLifetime ? ' checked' : ''}>
<label for="lifetime-${position}">${escapeHtml(lifetime.label)}</label>
</div>`,
    )
    .join('\n');
  const body =
    `<h1>Allow ${escapeHtml(input.client.name)} to use tools?</h1>
<dl>
<dt>Application</dt><dd>${escapeHtml(input.client.name)}</dd>
<dt>Client identifier</dt><dd><code>${escapeHtml(input.client.clientId)}</code>` +
    ` <span class="hint">(${escapeHtml(input.client.registration)})</span></dd>
<dt>Sends you back to</dt><dd><code>${escapeHtml(input.redirectHost)}</code></dd>
<dt>Gateway</dt><dd><code>${escapeHtml(input.gateway)}</code></dd>
<dt>Signed in as</dt><dd>${escapeHtml(input.person.name)}${input.person.email ? ` (${escapeHtml(input.person.email)})` : ''}</dd>
</dl>
${
  input.isLocalhostOnly
    ? `<p class="warning" role="note"><strong>Check this request.</strong> This application only returns to addresses on this computer ` +
      `(localhost). Approve only if you started it yourself from a program on this device.</p>`
    : ''
}
${
  reapproval.size
    ? `<p class="notice" role="note"><strong>Approve again.</strong> ${reapproval.size === 1 ? 'A tool' : 'Tools'} this application uses ` +
      `changed since you approved ${reapproval.size === 1 ? 'it' : 'them'}: ` +
      `${[...reapproval.keys()].map((name) => `<code>${escapeToolText(name, oneLine)}</code>`).join(', ')}. ` +
      `Read what changed below and tick each one you approve; ${reapproval.size === 1 ? 'it is' : 'they are'} not ticked for you. ` +
      `The other choices of your earlier approval, its time limit included, are kept.</p>`
    : ''
}
${input.error ? `<p class="error" role="alert" id="form-error">${escapeHtml(input.error)}</p>` : ''}
<form method="post" action="consent">
<input type="hidden" name="csrf_token" value="${escapeHtml(input.csrfToken)}">
<input type="hidden" name="request" value="${escapeHtml(input.requestId)}">
<fieldset>
<legend>Tools this application may call</legend>
<p class="hint">Choose only what this application needs. The logins a chosen tool needs are ticked with it.</p>
<div class="option"><input type="checkbox" id="select-all"><label for="select-all">Select all tools</label></div>
${toolGroups || '<p>No tools are published on this gateway yet.</p>'}
</fieldset>
<fieldset>
<legend>Logins the chosen tools may use</legend>
${logins}
</fieldset>
<fieldset>
<legend>Time limit</legend>
${lifetimes}
</fieldset>
<div class="actions">
<button type="submit" name="decision" value="allow" class="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="deny">Deny</button>
</div>
</form>`;
  // Ticking a tool ticks the login it needs (its only one, or the first of its alternatives when none of
  // them is ticked yet); a login no ticked tool can use is unticked. The server applies the same rule
  // (handlers/consent.ts), so the page also works without this script.
  const script =
    `(() => {
  const all = document.getElementById('select-all');
  const boxes = () => Array.from(document.querySelectorAll('input[name="tool"]'));
  const loginBox = (id) => Array.from(document.querySelectorAll('input[name="login"]')).find((box) => box.value === id);
  const loginsOf = (box) => (box.dataset.logins || '').split(' ').filter(Boolean);
  const syncLogins = (changed) => {
    for (const box of changed) {
      if (!box.checked) continue;
      const candidates = loginsOf(box).map(loginBox).filter(Boolean);
      if (candidates.length && !candidates.some((login) => login.checked)) candidates[0].checked = true;
    }
    const usable = new Set(boxes().filter((box) => box.checked).flatMap(loginsOf));
    for (const login of document.querySelectorAll('input[name="login"]')) if (!usable.has(login.value)) login.checked = false;
  };
  all.addEventListener('change', () => { for (const box of boxes()) box.checked = all.checked; syncLogins(boxes()); });
  for (const box of boxes()) box.addEventListener('change', () => { all.checked = boxes().every((item) => item.checked); ` +
    `syncLogins([box]); });
  all.checked = boxes().length > 0 && boxes().every((item) => item.checked);
})();`;
  return page(`Allow ${input.client.name}?`, body, { status: input.status ?? 200, formTargets: [input.redirectFormTarget], script });
}

export function lifetimeLabel(seconds: number): string {
  const units: Array<[number, string]> = [
    [86400, 'day'],
    [3600, 'hour'],
    [60, 'minute'],
    [1, 'second'],
  ];
  for (const [size, unit] of units) {
    if (seconds % size === 0) {
      const count = seconds / size;
      if (unit === 'day' && count === 1) return '24 hours';
      return `${count} ${unit}${count === 1 ? '' : 's'}`;
    }
  }
  return `${seconds} seconds`;
}
