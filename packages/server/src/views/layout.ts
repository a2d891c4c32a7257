/**
 * The document shell of every server-rendered page: the frame, the inlined stylesheet and script under one
 * per-response CSP nonce, and the security headers that go with it. No external assets (fonts, scripts, images):
 * a page works offline, leaks nothing to third parties, and a strict CSP can forbid everything else.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { html, raw, type SafeHtml } from './html.js';
import { PAGE_STYLE } from './styles.js';

/** A page ready to send: its status, its markup and the headers that must go with that markup (the CSP names its nonce). */
export interface RenderedPage {
  status: number;
  html: string;
  headers: Record<string, string>;
}

export interface PageOptions {
  /** 200 when absent. */
  status?: number;
  /**
   * Where a form on the page may submit besides this gateway (CSP `form-action`; browsers check the redirects of
   * a form submission against it too).
   */
  formTargets?: readonly string[];
  /** An inline script, run under the page's nonce (pages must also work without it). */
  script?: string;
  /** The stylesheets, in order (default: PAGE_STYLE alone). */
  styles?: readonly string[];
  /** Markup placed before `<main>` (the console's navigation). */
  header?: SafeHtml;
  /** A class for `<main>` (`wide` for table pages). */
  mainClass?: string;
}

/**
 * `default-src 'none'` with nonce'd inline style and script; `frame-ancestors 'none'` forbids framing
 * (clickjacking a button; MCP Security Best Practices › Confused Deputy). `form-action` lists this gateway and
 * the targets the page names.
 */
export function securityHeaders(nonce: string, formTargets: readonly string[] = []): Record<string, string> {
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

/** A whole page: the body goes inside `<main>`, the title is escaped, styles and script carry a fresh nonce. */
export function renderPage(title: string, body: SafeHtml, options: PageOptions = {}): RenderedPage {
  const nonce = randomBytes(16).toString('base64');
  const styles = (options.styles ?? [PAGE_STYLE]).join('');
  const page = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style nonce="${nonce}">${raw(styles)}</style>
</head>
<body>
${options.header ? html`${options.header}\n` : ''}<main${options.mainClass ? html` class="${options.mainClass}"` : ''}>
${body}
</main>
${options.script ? html`<script nonce="${nonce}">${raw(options.script)}</script>` : ''}
</body>
</html>
`;
  return { status: options.status ?? 200, html: page.text, headers: securityHeaders(nonce, options.formTargets) };
}

/** Sends a rendered page with its headers. */
export function sendPage(reply: FastifyReply, page: RenderedPage): FastifyReply {
  return reply.status(page.status).headers(page.headers).send(page.html);
}
