/**
 * Redirect URI rules (OAuth 2.1 §2.3 and §7.5.1, RFC 8252, RFC 9700 §2.1): which URIs a client may
 * register, and when a requested URI matches a registered one.
 */

export type RedirectUriKind = 'https' | 'loopback' | 'private-use';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** Why a URI cannot be a redirect URI, or its kind. */
export function classifyRedirectUri(uri: string): { kind: RedirectUriKind } | { problem: string } {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return { problem: `not an absolute URI: ${uri}` };
  }
  // OAuth 2.1 §2.3.1: the redirect URI MUST NOT include a fragment.
  if (url.hash || uri.includes('#')) return { problem: `must not contain a fragment: ${uri}` };
  if (url.username || url.password) return { problem: `must not contain user information: ${uri}` };
  if (url.protocol === 'https:') return { kind: 'https' };
  if (url.protocol === 'http:') {
    // RFC 8252 §7.3 / §8.3: plain http only for the loopback interface, where nothing leaves the machine.
    if (LOOPBACK_HOSTS.has(url.hostname)) return { kind: 'loopback' };
    return { problem: `http is allowed only for loopback redirect URIs (127.0.0.1, [::1], localhost): ${uri}` };
  }
  // RFC 8252 §7.1: private-use schemes are reverse domain names of the app (at least one dot).
  const scheme = url.protocol.slice(0, -1);
  if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+$/i.test(scheme)) return { kind: 'private-use' };
  return { problem: `scheme '${scheme}:' is not https, loopback http or a private-use (reverse domain) scheme: ${uri}` };
}

/**
 * Exact string comparison (OAuth 2.1 §4.1.1, RFC 9700 §2.1), with the one exception RFC 8252 §7.3 makes:
 * for a loopback http redirect the port is chosen by the native app at run time, so only the port may differ.
 */
export function redirectUriMatches(registered: string, requested: string): boolean {
  if (registered === requested) return true;
  let left: URL;
  let right: URL;
  try {
    left = new URL(registered);
    right = new URL(requested);
  } catch {
    return false;
  }
  if (left.protocol !== 'http:' || right.protocol !== 'http:') return false;
  if (!LOOPBACK_HOSTS.has(left.hostname) || left.hostname !== right.hostname) return false;
  // Compare everything but the port, as written (no normalisation beyond URL parsing of the authority).
  const withoutPort = (url: URL): string => `${url.protocol}//${url.hostname}${url.pathname}${url.search}`;
  return withoutPort(left) === withoutPort(right) && !requested.includes('#') && requested.startsWith('http://');
}

/** True when every redirect URI is a loopback one (MCP security considerations: warn on the consent page). */
export function isLocalhostOnly(uris: readonly string[]): boolean {
  return uris.length > 0 && uris.every((uri) => {
    const classified = classifyRedirectUri(uri);
    return 'kind' in classified && classified.kind === 'loopback';
  });
}

/** What the consent page shows as "where you will be sent": the host, or the scheme for an app. */
export function redirectDisplayHost(uri: string): string {
  try {
    const url = new URL(uri);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.host;
    return `${url.protocol} (an app on this device)`;
  } catch {
    return uri;
  }
}
