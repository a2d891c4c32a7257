/**
 * Pieces of operator pages (issue: the console): navigation, tables and status badges, on CONSOLE_STYLE. Each
 * escapes what it is given; markup passes through only as SafeHtml.
 */
import { html, type HtmlValue, type SafeHtml } from './html.js';

/** The tone of a status badge: good (active, allowed), warn (paused, waiting), bad (denied, failed), info, or plain. */
export type BadgeTone = 'good' | 'warn' | 'bad' | 'info' | 'plain';

/** A short status word beside an item; its meaning is in the text, never in the colour alone (WCAG 1.4.1). */
export function badge(text: string, tone: BadgeTone = 'plain'): SafeHtml {
  return tone === 'plain' ? html`<span class="badge">${text}</span>` : html`<span class="badge ${tone}">${text}</span>`;
}

export interface NavigationLink {
  href: string;
  label: string;
}

/** The site navigation; the current page's link carries `aria-current="page"`. */
export function navigation(label: string, links: readonly NavigationLink[], currentHref: string): SafeHtml {
  const items = links.map(
    (link) => html`<li><a href="${link.href}"${link.href === currentHref ? html` aria-current="page"` : ''}>${link.label}</a></li>`,
  );
  return html`<nav class="site" aria-label="${label}"><ul>${items}</ul></nav>`;
}

export interface TableColumn<Row> {
  /** The header text (also each cell's label on narrow screens). */
  label: string;
  cell(row: Row): HtmlValue;
}

/** A data table with a caption and a header row; `empty` is shown instead when there is no row. */
export function table<Row>(caption: string, columns: readonly TableColumn<Row>[], rows: readonly Row[], empty: string): SafeHtml {
  if (rows.length === 0) return html`<p class="hint">${empty}</p>`;
  const head = columns.map((column) => html`<th scope="col">${column.label}</th>`);
  const body = rows.map(
    (row) => html`<tr>${columns.map((column) => html`<td data-label="${column.label}">${column.cell(row)}</td>`)}</tr>\n`,
  );
  return html`<table>
<caption>${caption}</caption>
<thead><tr>${head}</tr></thead>
<tbody>
${body}</tbody>
</table>`;
}
