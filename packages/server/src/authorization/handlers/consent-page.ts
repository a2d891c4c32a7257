import type { RenderedPage } from '../../views/index.js';
import { initialChoices, type ConsentChoices } from '../consent/choices.js';
import { consentPage, lifetimeLabel } from '../consent/pages.js';
import type { PendingAuthorization } from '../consent/pending.js';
import { isLocalhostOnly, redirectDisplayHost } from '../oauth/redirect-uris.js';
import type { BrowserSession } from '../signin/browser-sessions.js';
import type { SessionRecord } from '../stores/ports.js';
import { connectLinksFor } from '../consent/connect-links.js';
import type { BrowserFlow } from './browser-flow.js';
import type { AuthorizationDependencies } from './dependencies.js';

export type ConsentPageDependencies = Pick<AuthorizationDependencies, 'settings' | 'offer' | 'personLogins'>;

/** What the page draws besides the request: a refusal and its status, the person's own choices, their earlier session. */
export interface ConsentPageExtra {
  error?: string;
  status?: number;
  choices?: ConsentChoices;
  previous?: SessionRecord;
}

/** Where a form submitted on the consent page may end up (CSP form-action): the redirect's origin or scheme. */
function formTargetOf(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

function registrationText(registration: PendingAuthorization['client']['registration']): string {
  if (registration === 'metadata-document') return 'identified by its metadata document';
  if (registration === 'dynamic') return 'registered itself; the name is unverified';
  return 'pre-registered by the gateway administrator';
}

/**
 * Draws the consent page for a pending request, and records the tools it shows on the request (the decision is
 * checked against what the person saw, with the fingerprints shown).
 */
export async function renderConsent(
  { settings, offer, personLogins }: ConsentPageDependencies,
  pending: BrowserFlow['pending'],
  browser: BrowserSession,
  pendingRequest: PendingAuthorization,
  extra: ConsentPageExtra = {},
): Promise<RenderedPage> {
  const tools = [...offer.listTools()].sort((a, b) => (a.source + a.name < b.source + b.name ? -1 : 1));
  pendingRequest.shownTools = tools;
  await pending.save(pendingRequest);
  const neededLogins = new Set(tools.flatMap((tool) => tool.logins));
  const logins = offer.listLogins().filter((login) => neededLogins.has(login.id));
  const client = pendingRequest.client;
  // The changes are shown again when a refused form is drawn with the person's own choices.
  const initial = initialChoices(pendingRequest.requestedTools ?? [], tools, extra.previous, {
    changesSince: (name, fingerprint) => offer.changesSince(name, fingerprint),
    lifetimeChoicesSeconds: settings.lifetimeChoicesSeconds,
  });
  return consentPage({
    requestId: pendingRequest.id,
    csrfToken: browser.csrfToken,
    gateway: settings.issuer,
    person: { name: browser.person!.name, ...(browser.person!.email ? { email: browser.person!.email } : {}) },
    client: { name: client.name, clientId: client.clientId, registration: registrationText(client.registration) },
    redirectHost: redirectDisplayHost(pendingRequest.redirectUri),
    redirectFormTarget: formTargetOf(pendingRequest.redirectUri),
    isLocalhostOnly: isLocalhostOnly(client.redirectUris),
    tools,
    logins,
    lifetimes: settings.lifetimeChoicesSeconds.map((seconds) => ({ seconds, label: lifetimeLabel(seconds) })),
    selected: extra.choices ?? initial.choices,
    ...(initial.reapproval.length ? { reapproval: initial.reapproval } : {}),
    connect: connectLinksFor(personLogins, tools, browser.person!.subject),
    ...(extra.error ? { error: extra.error } : {}),
    ...(extra.status ? { status: extra.status } : {}),
  });
}
