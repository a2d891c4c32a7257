/**
 * The consent page: what the application asks for, each tool with what it reaches and what changed, the logins
 * and the time limit to choose. Built on the shared views (../../views/): escaping, layout, CSP, form helpers.
 */
import { compareText, escapeHiddenCharacters, hasHiddenCharacters } from '@gateway/core';
import type { LoginSummary } from '../../credentials/index.js';
import {
  csrfField,
  escapeHtml,
  hiddenField,
  html,
  joinHtml,
  raw,
  renderPage,
  type RenderedPage,
  type SafeHtml,
} from '../../views/index.js';
import type { ConsentTool } from './consent-tool.js';

/**
 * Tool text (a name, title or description from a lock) for the page: hidden characters (invisible, tag,
 * bidirectional controls; core's tool-text) shown as `\u{E0049}`, never raw, then escaped for HTML. Import makes
 * a tool holding any unsupported, so only a lock written before that rule can bring one here: the page shows it
 * escaped and flags it (`hiddenTextMark`). Form values (the checkbox's tool name) stay exact: plain interpolation there.
 */
export function escapeToolText(text: string, options: { singleLine?: boolean } = {}): string {
  return escapeHtml(escapeHiddenCharacters(text, options));
}

function toolText(text: string, options: { singleLine?: boolean } = {}): SafeHtml {
  return raw(escapeToolText(text, options));
}

/** The flag beside a tool whose name, title or description holds hidden characters; '' when none does. */
function hiddenTextMark(tool: ConsentTool): SafeHtml | '' {
  const texts = [tool.name, tool.title ?? '', tool.description];
  return texts.some(hasHiddenCharacters) ? raw('<span class="mark hidden-text">Hidden characters</span>') : '';
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
function toolTarget(tool: ConsentTool): SafeHtml {
  const target = tool.target;
  switch (target.kind) {
    case 'http':
      return html`Calls <code>${target.method} ${toolText(target.path, oneLine)}</code>`;
    case 'mcp':
      return html`Calls the tool <code>${toolText(target.tool, oneLine)}</code> of the MCP server <code>${target.server}</code>`;
    default: {
      const unreachable: never = target;
      return unreachable;
    }
  }
}

/** What changed since the person approved the tool; shown beside it, never hidden behind a toggle. */
function changeNote(note: ReapprovalNote): SafeHtml {
  if (note.changes === null) {
    return raw(
      '<div class="changes"><p><strong>Changed since you approved it</strong> (the earlier version is no longer published).</p></div>',
    );
  }
  const items = note.changes.map((change) => html`<li>${toolText(change, oneLine)}</li>`);
  return html`<div class="changes"><p><strong>Changed since you approved it:</strong></p><ul>${items}</ul></div>`;
}

const HIDDEN_TEXT_HINT = raw(
  '<p class="hint">This tool\'s text holds characters a screen does not show (shown here as <code>\\u{…}</code>) ' +
    'but an AI model reads.</p>',
);

/** The marks beside a tool's title: what it does to data, whether it changed, is blocked, or hides characters. */
function toolMarks(tool: ConsentTool, change: ReapprovalNote | undefined): SafeHtml {
  return html`${[
    tool.readOnly ? raw('<span class="mark read-only">Read-only</span>') : '',
    tool.destructive ? raw('<span class="mark destructive">Destructive</span>') : '',
    tool.eachCall ? raw('<span class="mark each-call">each-call</span>') : '',
    // Neither read-only nor destructive: it changes something (MCP Tools › ToolAnnotations).
    !tool.readOnly && !tool.destructive ? raw('<span class="mark writes">Writes</span>') : '',
    change ? raw('<span class="mark changed">Changed</span>') : '',
    tool.blocked !== undefined ? raw('<span class="mark blocked">Unavailable</span>') : '',
    hiddenTextMark(tool),
  ]}`;
}

/** Beside an `each-call` tool: approving it here does not let it run unasked (docs/approvals.md). */
function eachCallNote(approvers: readonly string[] | null): SafeHtml {
  const who =
    approvers === null
      ? 'you approve it'
      : `${approvers.map((name) => (name === '@operators' ? 'an operator' : name)).join(' or ')} approves it`;
  return html`<p class="hint each-call-note">Each call waits for approval: it runs once ${who} on its approval page.</p>`;
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
function connectLinks(links: readonly ConnectLink[]): SafeHtml | '' {
  if (links.length === 0) return '';
  const anchors = links.map(
    (link) => html`<a class="connect" href="${link.href}" target="_blank" rel="noopener">Connect ${link.label}</a>`,
  );
  const note = '(your own account; you can also connect it when a call first needs it)';
  return html`<p class="hint connect-links">${joinHtml(anchors, ' ')} <span>${note}</span></p>`;
}

function toolOption(
  tool: ConsentTool,
  index: number,
  isChecked: boolean,
  change: ReapprovalNote | undefined,
  connect: readonly ConnectLink[] = [],
): SafeHtml {
  const id = `tool-${index}`;
  // A tool blocked by drift is shown, with why, but cannot be ticked (and a disabled box is never submitted).
  const isBlocked = tool.blocked !== undefined;
  const hasTitle = tool.title !== null && tool.title !== '' && tool.title !== tool.name;
  const paragraphs = descriptionParagraphs(tool);
  const state = isBlocked ? ' disabled' : isChecked ? ' checked' : '';
  // data-logins: the logins this tool can use, for the inline script that ticks them with the tool.
  const box = html`<input type="checkbox" name="tool" value="${tool.name}" id="${id}" aria-describedby="${id}-details" `;
  const title = toolText(hasTitle ? tool.title! : tool.name, oneLine);
  const description = paragraphs.map((paragraph) => html`<p>${toolText(paragraph)}</p>`);
  return html`<div class="option">
${box}data-logins="${tool.logins.join(' ')}"${raw(state)}>
<label for="${id}"><span class="tool-title">${title}</span>${toolMarks(tool, change)}</label>
<div class="details" id="${id}-details">
${hasTitle ? html`<p class="hint">Tool name <code>${toolText(tool.name, oneLine)}</code></p>` : ''}
<p class="hint target">${toolTarget(tool)}</p>
${tool.eachCall ? eachCallNote(tool.eachCall.approvers) : ''}
${connectLinks(connect)}
${paragraphs.length ? html`<div class="tool-description">${description}</div>` : ''}
${hiddenTextMark(tool) ? HIDDEN_TEXT_HINT : ''}
${change ? changeNote(change) : ''}
${isBlocked ? html`<p class="blocked-reason">Cannot be approved now: ${tool.blocked!}.</p>` : ''}
<details class="hint"><summary>Fingerprint</summary><code>${tool.fingerprint}</code></details>
</div>
</div>`;
}

/** The tools, one fieldset per source (sources in the one string order). */
function toolGroups(input: ConsentPageInput, reapproval: ReadonlyMap<string, ReapprovalNote>): SafeHtml {
  const bySource = new Map<string, ConsentTool[]>();
  for (const tool of input.tools) bySource.set(tool.source, [...(bySource.get(tool.source) ?? []), tool]);
  const selectedTools = new Set(input.selected?.tools ?? []);
  let index = 0;
  const groups = [...bySource.entries()]
    .sort(([a], [b]) => compareText(a, b))
    .map(
      ([source, tools]) => html`<fieldset>
<legend>Source <code>${source}</code></legend>
${joinHtml(
  tools.map((tool) => toolOption(tool, index++, selectedTools.has(tool.name), reapproval.get(tool.name), input.connect?.get(tool.name))),
  '\n',
)}
</fieldset>`,
    );
  return joinHtml(groups, '\n');
}

function loginOptions(input: ConsentPageInput): SafeHtml {
  if (input.logins.length === 0) return raw('<p class="hint">None of these tools needs a login.</p>');
  const selectedLogins = new Set(input.selected?.logins ?? []);
  const usedBy = (login: LoginSummary): string[] => input.tools.filter((tool) => tool.logins.includes(login.id)).map((tool) => tool.name);
  const options = input.logins.map((login, position) => {
    const id = `login-${position}`;
    const checked = selectedLogins.has(login.id) ? raw(' checked') : '';
    const users = usedBy(login).join(', ') || 'no listed tool';
    return html`<div class="option">
<input type="checkbox" name="login" value="${login.id}" id="${id}" aria-describedby="${id}-details"${checked}>
<label for="${id}"><code>${login.id}</code></label>
<div class="details hint" id="${id}-details">${login.type} credential of <code>${login.source}</code>; used by ${users}</div>
</div>`;
  });
  return joinHtml(options, '\n');
}

const CHECKED = raw(' checked');

function lifetimeOptions(input: ConsentPageInput): SafeHtml {
  const chosenLifetime = input.lifetimes.some((lifetime) => lifetime.seconds === input.selected?.lifetime)
    ? input.selected!.lifetime
    : input.lifetimes[0]?.seconds;
  const options = input.lifetimes.map(
    (lifetime, position) => html`<div class="option">
<input type="radio" name="lifetime" value="${lifetime.seconds}" id="lifetime-${position}"${lifetime.seconds === chosenLifetime && CHECKED}>
<label for="lifetime-${position}">${lifetime.label}</label>
</div>`,
  );
  return joinHtml(options, '\n');
}

const LOCALHOST_WARNING = raw(
  '<p class="warning" role="note"><strong>Check this request.</strong> This application only returns to addresses on this computer ' +
    '(localhost). Approve only if you started it yourself from a program on this device.</p>',
);

/** The note above the form when the application asks to have changed tools approved again. */
function reapprovalNotice(reapproval: ReadonlyMap<string, ReapprovalNote>): SafeHtml | '' {
  if (reapproval.size === 0) return '';
  const one = reapproval.size === 1;
  const names = joinHtml(
    [...reapproval.keys()].map((name) => html`<code>${toolText(name, oneLine)}</code>`),
    ', ',
  );
  const they = one ? 'it is' : 'they are';
  return html`${[
    html`<p class="notice" role="note"><strong>Approve again.</strong> ${one ? 'A tool' : 'Tools'} this application uses `,
    html`changed since you approved ${one ? 'it' : 'them'}: ${names}. Read what changed below and tick each one you approve; `,
    html`${they} not ticked for you. The other choices of your earlier approval, its time limit included, are kept.</p>`,
  ]}`;
}

export function consentPage(input: ConsentPageInput): RenderedPage {
  const reapproval = new Map((input.reapproval ?? []).map((note) => [note.name, note] as const));
  const groups = toolGroups(input, reapproval);
  const person = input.person;
  const body = html`<h1>Allow ${input.client.name} to use tools?</h1>
<dl>
<dt>Application</dt><dd>${input.client.name}</dd>
<dt>Client identifier</dt><dd><code>${input.client.clientId}</code> <span class="hint">(${input.client.registration})</span></dd>
<dt>Sends you back to</dt><dd><code>${input.redirectHost}</code></dd>
<dt>Gateway</dt><dd><code>${input.gateway}</code></dd>
<dt>Signed in as</dt><dd>${person.name}${person.email ? html` (${person.email})` : ''}</dd>
</dl>
${input.isLocalhostOnly ? LOCALHOST_WARNING : ''}
${reapprovalNotice(reapproval)}
${input.error ? html`<p class="error" role="alert" id="form-error">${input.error}</p>` : ''}
<form method="post" action="consent">
${csrfField(input.csrfToken)}
${hiddenField('request', input.requestId)}
<fieldset>
<legend>Tools this application may call</legend>
<p class="hint">Choose only what this application needs. The logins a chosen tool needs are ticked with it.</p>
<div class="option"><input type="checkbox" id="select-all"><label for="select-all">Select all tools</label></div>
${groups.text ? groups : raw('<p>No tools are published on this gateway yet.</p>')}
</fieldset>
<fieldset>
<legend>Logins the chosen tools may use</legend>
${loginOptions(input)}
</fieldset>
<fieldset>
<legend>Time limit</legend>
${lifetimeOptions(input)}
</fieldset>
<div class="actions">
<button type="submit" name="decision" value="allow" class="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="deny">Deny</button>
</div>
</form>`;
  return renderPage(`Allow ${input.client.name}?`, body, {
    status: input.status ?? 200,
    formTargets: [input.redirectFormTarget],
    script: CONSENT_SCRIPT,
  });
}

// Ticking a tool ticks the login it needs (its only one, or the first of its alternatives when none of
// them is ticked yet); a login no ticked tool can use is unticked. The server applies the same rule
// (handlers/consent.ts), so the page also works without this script.
const CONSENT_SCRIPT =
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
