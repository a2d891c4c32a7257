/**
 * Form pieces every server-rendered form uses: the CSRF token (the browser session's, checked by the handler the
 * form posts to) and the hidden fields that carry a request along.
 */
import { html, type SafeHtml } from './html.js';

/** The browser session's CSRF token, as the hidden `csrf_token` field every state-changing form must carry. */
export function csrfField(token: string): SafeHtml {
  return hiddenField('csrf_token', token);
}

export function hiddenField(name: string, value: string): SafeHtml {
  return html`<input type="hidden" name="${name}" value="${value}">`;
}

/**
 * A form that changes something: `method="post"`, the CSRF field first, then the fields and the buttons given.
 * `action` is relative to the page (the console's forms post to their own route).
 */
export function postForm(action: string, csrfToken: string, content: SafeHtml, options: { className?: string } = {}): SafeHtml {
  return html`<form method="post" action="${action}"${options.className ? html` class="${options.className}"` : ''}>
${csrfField(csrfToken)}
${content}
</form>`;
}
