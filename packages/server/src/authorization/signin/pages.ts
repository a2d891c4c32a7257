/**
 * The pages a person sees before consent: sign-in (a local account, the company's identity provider, or both) and
 * the gateway's own error page. Built on the shared views (../../views/): escaping, layout, CSP, form helpers.
 */
import { csrfField, hiddenField, html, raw, renderPage, type RenderedPage } from '../../views/index.js';

/** The gateway's own error page: used when redirecting back would be unsafe (unknown client or redirect URI). */
export function errorPage(title: string, message: string, status = 400): RenderedPage {
  return renderPage(
    title,
    html`<h1>${title}</h1>
<p role="alert">${message}</p>
<p class="hint">Nothing was shared with the application. You can close this window.</p>`,
    { status },
  );
}

export interface SignInPageInput {
  /** What signing in continues: a pending authorization request of a client, or a page of this gateway. */
  target: { requestId: string; clientName: string } | { returnTo: string };
  csrfToken: string;
  gateway: string;
  localAccounts: boolean;
  oidc?: { label: string; href: string };
  error?: string;
  name?: string;
  status?: number;
}

/** The name field's fixed attributes and the password field (no value is ever written back into a password field). */
const NAME_ATTRIBUTES = raw('type="text" id="name" name="name" autocomplete="username" autocapitalize="none" spellcheck="false"');
const PASSWORD_FIELD = raw(
  '<div class="field"><label for="password">Password</label><input type="password" id="password" name="password" ' +
    'autocomplete="current-password" required></div>',
);

export function signInPage(input: SignInPageInput): RenderedPage {
  const local = input.localAccounts
    ? html`<form method="post" action="signin" novalidate>
${csrfField(input.csrfToken)}
${'requestId' in input.target ? hiddenField('request', input.target.requestId) : hiddenField('next', input.target.returnTo)}
<div class="field"><label for="name">Name</label><input ${NAME_ATTRIBUTES} value="${input.name ?? ''}" required></div>
${PASSWORD_FIELD}
<div class="actions"><button type="submit" class="allow">Sign in</button></div>
</form>`
    : '';
  const oidcButton = input.localAccounts ? 'button secondary' : 'button primary';
  const oidc = input.oidc
    ? html`<div class="actions"><a class="${oidcButton}" href="${input.oidc.href}">${input.oidc.label}</a></div>`
    : '';
  return renderPage(
    'Sign in',
    html`<h1>Sign in to ${input.gateway}</h1>
${
  'clientName' in input.target
    ? html`<p><strong>${input.target.clientName}</strong> is asking to use tools on your behalf. Sign in to review the request.</p>`
    : html`<p>Sign in to continue to the page you asked for.</p>`
}
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ''}
${local}
${oidc}`,
    { status: input.status ?? 200 },
  );
}

/** A page that tells the person something went as asked (a linked account). */
export function noticePage(title: string, message: string, status = 200): RenderedPage {
  return renderPage(title, html`<h1>${title}</h1>\n<p role="status">${message}</p>`, { status });
}

export interface ConnectSignInPageInput {
  /** Where the form posts (`<base>/connect/signin`: absolute, as the page is drawn at two paths). */
  action: string;
  csrfToken: string;
  /** The connect page's ticket, carried through the sign-in. */
  ticket: string;
  gateway: string;
  /** Whether the local accounts' form is offered (`auth.localAccounts`). */
  localAccounts: boolean;
  /** The OIDC sign-in (`auth.oidc`): its button's label and where it starts, returning to the connect page. */
  oidc?: { label: string; href: string };
  /** The provider whose account is to be linked, and the origin its authorization endpoint is at. */
  label: string;
  providerOrigin: string;
  error?: string;
  name?: string;
  status?: number;
}

/**
 * Sign-in on the connect page of a per-person login (a local account's form, the OIDC provider's button, or both):
 * the person then goes on to link.
 */
export function connectSignInPage(input: ConnectSignInPageInput): RenderedPage {
  const local = input.localAccounts
    ? html`<form method="post" action="${input.action}" novalidate>
${csrfField(input.csrfToken)}
${hiddenField('ticket', input.ticket)}
<div class="field"><label for="name">Name</label><input ${NAME_ATTRIBUTES} value="${input.name ?? ''}" required></div>
${PASSWORD_FIELD}
<div class="actions"><button type="submit" class="allow">Sign in</button></div>
</form>`
    : '';
  const oidcButton = input.localAccounts ? 'button secondary' : 'button primary';
  const oidc = input.oidc
    ? html`<div class="actions"><a class="${oidcButton}" href="${input.oidc.href}">${input.oidc.label}</a></div>`
    : '';
  return renderPage(
    'Sign in',
    html`<h1>Sign in to ${input.gateway}</h1>
<p>Sign in to connect your <strong>${input.label}</strong> account. Only you can link it, as yourself.</p>
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ''}
${local}
${oidc}`,
    // The sign-in redirects on to the provider: a form's redirects must be allowed by form-action too.
    { status: input.status ?? 200, formTargets: [input.providerOrigin] },
  );
}
