/**
 * Server-rendered pages (sign-in, consent, and operator pages): escaping, the document shell with its CSP, the
 * stylesheets, form helpers and page components. Pages of an area build on these and hold only their content.
 */
export { escapeHtml, html, joinHtml, raw, SafeHtml, type HtmlValue } from './html.js';
export { renderPage, securityHeaders, sendPage, type PageOptions, type RenderedPage } from './layout.js';
export { CONSOLE_STYLE, PAGE_STYLE } from './styles.js';
export { csrfField, hiddenField, postForm } from './forms.js';
export { badge, navigation, table, type BadgeTone, type NavigationLink, type TableColumn } from './components.js';
