/** The frame of every console page: the console's navigation, the wide layout and the console sheet. */
import { CONSOLE_STYLE, html, navigation, PAGE_STYLE, renderPage, type RenderedPage, type SafeHtml } from '../views/index.js';

/** The console's pages, in navigation order: path under `${basePath}/console`, and label. */
export const CONSOLE_PAGES = [
  { path: '', label: 'Sources' },
  { path: '/sessions', label: 'Sessions' },
  { path: '/receipts', label: 'Receipts' },
  { path: '/webhooks', label: 'Webhooks' },
  { path: '/logins', label: 'Logins' },
  { path: '/approvals', label: 'Approvals' },
] as const;

export type ConsolePath = (typeof CONSOLE_PAGES)[number]['path'];

/** A console page with the navigation and the heading: title, page of the navigation, operator, body, status. */
export type ShowConsolePage = (title: string, current: ConsolePath, operator: string, body: SafeHtml, status?: number) => RenderedPage;

export interface ConsolePageOptions {
  status?: number;
  /** With navigation: the gateway's base path and the page shown (marked current). */
  nav?: { basePath: string; current: ConsolePath };
}

export function consolePage(title: string, body: SafeHtml, options: ConsolePageOptions = {}): RenderedPage {
  const nav = options.nav;
  const header = nav
    ? navigation(
        'Console',
        CONSOLE_PAGES.map((page) => ({ href: `${nav.basePath}/console${page.path}`, label: page.label })),
        `${nav.basePath}/console${nav.current}`,
      )
    : undefined;
  return renderPage(`${title} · Gateway console`, body, {
    styles: [PAGE_STYLE, CONSOLE_STYLE],
    mainClass: 'wide',
    ...(options.status === undefined ? {} : { status: options.status }),
    ...(header ? { header } : {}),
  });
}

/** "3 h 12 min", "45 s": how long until `until` (ISO), or "ended". */
export function timeLeft(until: string, now = Date.now()): string {
  const seconds = Math.floor((Date.parse(until) - now) / 1000);
  if (seconds <= 0) return 'ended';
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} days`;
}

/** A page heading with the signed-in operator beside it. */
export function heading(title: string, operator: string): SafeHtml {
  return html`<h1>${title}</h1>\n<p class="hint">Signed in as ${operator} (operator).</p>`;
}
