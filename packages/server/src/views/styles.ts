/**
 * The stylesheets of server-rendered pages, inlined into each page under its CSP nonce (no external assets).
 * PAGE_STYLE is the sign-in and consent pages' sheet: the document frame, forms, buttons, option lists and the
 * marks beside a tool. CONSOLE_STYLE adds what operator pages need: navigation, tables and status badges.
 * Colours meet WCAG 2.2 AA contrast on their backgrounds.
 */

export const PAGE_STYLE =
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
pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; white-space: pre-wrap;
  overflow-wrap: anywhere; }
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
.mark.changed, .mark.each-call { background: var(--warn-bg); color: var(--warn-ink); }
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

export const CONSOLE_STYLE = `
main.wide { max-width: 72rem; }
nav.site { max-width: 72rem; margin: 1rem auto 0; padding: 0 2rem; }
nav.site ul { display: flex; flex-wrap: wrap; gap: 0.25rem 1.25rem; list-style: none; margin: 0; padding: 0; }
nav.site a { color: var(--accent); font-weight: 600; }
nav.site a[aria-current=page] { color: var(--ink); text-decoration: none; }
table { border-collapse: collapse; width: 100%; margin: 1rem 0; }
caption { text-align: left; font-weight: 700; padding-bottom: 0.5rem; }
th, td { text-align: left; vertical-align: top; padding: 0.4rem 0.6rem; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
th { color: var(--muted); font-weight: 600; overflow-wrap: normal; }
.badge { display: inline-block; font-size: 0.8rem; font-weight: 700; padding: 0 0.5rem; border-radius: 999px; background: #e6e9ee; }
.badge { white-space: nowrap; }
.badge.good { background: var(--ro-bg); color: var(--ro-ink); }
.badge.warn { background: var(--warn-bg); color: var(--warn-ink); }
.badge.bad { background: var(--de-bg); color: var(--de-ink); }
.badge.info { background: var(--wr-bg); color: var(--wr-ink); }
form.inline { display: inline; }
form.filters { display: grid; grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr)); gap: 0 1rem; align-items: end; }
form.filters .actions { margin-top: 0; }
select { font: inherit; padding: 0.45rem; border: 1px solid #6b7380; border-radius: 4px; background: #fff; max-width: 100%; }
td a { color: var(--accent); }
main.wide section { margin-top: 1.75rem; padding-top: 1rem; border-top: 1px solid var(--line); }
@media (max-width: 34rem) {
  nav.site { padding: 0 1rem; }
  table, caption, thead, tbody, tr, th, td { display: block; }
  thead { position: absolute; left: -9999px; }
  td { border-bottom: 0; padding: 0.2rem 0; }
  tr { border-bottom: 1px solid var(--line); padding: 0.5rem 0; }
  td[data-label]::before { content: attr(data-label) ": "; font-weight: 600; color: var(--muted); }
}
`;
