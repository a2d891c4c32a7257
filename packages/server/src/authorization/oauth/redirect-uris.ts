/**
 * Redirect URI rules (OAuth 2.1 §2.3 and §7.5.1, RFC 8252, RFC 9700 §2.1): which URIs a client may
 * register, and when a requested URI matches a registered one.
 */

export type RedirectUriKind = 'https' | 'loopback' | 'private-use';

/** Longest redirect URI accepted anywhere (registration, metadata documents, /authorize); docs/authorization.md. */
export const MAX_REDIRECT_URI_LENGTH = 2000;

/**
 * A loopback redirect URI exactly as it must be written: lower-case `http`, one of the three loopback names,
 * an optional port, then path and query. Userinfo, other spellings of the address (`127.1`, `2130706433`,
 * `[::ffff:127.0.0.1]`) and anything a URL parser would silently repair cannot match this.
 */
const LOOPBACK_URI = /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(?::([0-9]{1,5}))?([/?][^#]*)?$/;

/**
 * Scheme names a browser or the OS gives a meaning of their own (script, inline content, local files):
 * never a label of a private-use scheme, so `javascript.x:` or `com.example.data:` cannot pass as an app.
 */
const DANGEROUS_SCHEME_LABELS = new Set([
  'javascript',
  'vbscript',
  'livescript',
  'data',
  'file',
  'blob',
  'filesystem',
  'about',
  'view-source',
  'jar',
  'http',
  'https',
  'ws',
  'wss',
  'ftp',
  'mailto',
  'chrome',
  'intent',
]);

/** RFC 8252 §7.1: a private-use scheme is a reverse domain name: lower-case labels separated by periods. */
const REVERSE_DOMAIN_SCHEME = /^[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+$/;

/** The authority as written between `//` and the path: the URL parser hides userinfo and rewrites hosts. */
function writtenAuthority(uri: string): string {
  const start = uri.indexOf('//') + 2;
  const end = uri.slice(start).search(/[/?#]/);
  return end < 0 ? uri.slice(start) : uri.slice(start, start + end);
}

/** Why a URI cannot be a redirect URI, or its kind. */
export function classifyRedirectUri(uri: string): { kind: RedirectUriKind } | { problem: string } {
  const shown = uri.length > 200 ? `${uri.slice(0, 200)}…` : uri;
  if (uri.length > MAX_REDIRECT_URI_LENGTH)
    return { problem: `longer than ${MAX_REDIRECT_URI_LENGTH} characters: ${JSON.stringify(shown)}` };
  // Tabs, newlines and surrounding spaces are removed by the URL parser, so the URI compared later would not
  // be the one registered; non-ASCII is refused for the same reason (it would be percent-encoded).
  if (/[^\x21-\x7e]/.test(uri)) return { problem: `contains spaces, control or non-ASCII characters: ${JSON.stringify(shown)}` };
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return { problem: `not an absolute URI: ${shown}` };
  }
  // OAuth 2.1 §2.3.1: the redirect URI MUST NOT include a fragment.
  if (url.hash || uri.includes('#')) return { problem: `must not contain a fragment: ${shown}` };
  if (url.username || url.password || (uri.includes('//') && writtenAuthority(uri).includes('@'))) {
    return { problem: `must not contain user information: ${shown}` };
  }
  const scheme = uri.slice(0, uri.indexOf(':'));
  if (scheme === 'https' || scheme === 'http') {
    if (!uri.startsWith(`${scheme}://`)) return { problem: `must start with ${scheme}:// : ${shown}` };
    // The host exactly as the URL parser reads it: `127.1`, `2130706433`, `0x7f.0.0.1`, percent-encoded or
    // upper-case hosts are rewritten by it, so such a URI would not name what it seems to.
    const authority = writtenAuthority(uri);
    const host = authority.replace(/:[0-9]*$/, '');
    if (host !== url.hostname) return { problem: `the host must be written in its standard lower-case form (${url.hostname}): ${shown}` };
    if (
      /^[0-9.]+$/.test(host) &&
      !/^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])$/.test(host)
    ) {
      return { problem: `not a standard dotted IPv4 address: ${shown}` };
    }
  }
  if (scheme === 'https') return { kind: 'https' };
  if (scheme === 'http') {
    // RFC 8252 §7.3 / §8.3: plain http only for the loopback interface, where nothing leaves the machine.
    const loopback = LOOPBACK_URI.exec(uri);
    if (loopback && (loopback[2] === undefined || Number(loopback[2]) <= 65535)) return { kind: 'loopback' };
    return { problem: `http is allowed only for loopback redirect URIs (127.0.0.1, [::1], localhost): ${shown}` };
  }
  // RFC 8252 §7.1: private-use schemes are reverse domain names of the app (at least one period).
  if (REVERSE_DOMAIN_SCHEME.test(scheme) && !scheme.split('.').some((label) => DANGEROUS_SCHEME_LABELS.has(label)))
    return { kind: 'private-use' };
  return {
    problem:
      `scheme '${scheme.slice(0, 60)}:' is not https, loopback http or a private-use (reverse domain, ` +
      `e.g. com.example.app:) scheme: ${shown}`,
  };
}

/**
 * Exact string comparison (OAuth 2.1 §4.1.1, RFC 9700 §2.1), with the one exception RFC 8252 §7.3 makes:
 * for a loopback http redirect the port is chosen by the native app at run time, so only the port may differ.
 * Both sides are read as written (LOOPBACK_URI), never through a URL parser that would forgive userinfo,
 * tabs or another spelling of the address.
 */
export function redirectUriMatches(registered: string, requested: string): boolean {
  if (registered === requested) return true;
  const left = LOOPBACK_URI.exec(registered);
  const right = LOOPBACK_URI.exec(requested);
  if (!left || !right) return false;
  if (!('kind' in classifyRedirectUri(requested))) return false;
  return left[1] === right[1] && (left[3] ?? '') === (right[3] ?? '');
}

/** True when every redirect URI is a loopback one (MCP security considerations: warn on the consent page). */
export function isLocalhostOnly(uris: readonly string[]): boolean {
  return (
    uris.length > 0 &&
    uris.every((uri) => {
      const classified = classifyRedirectUri(uri);
      return 'kind' in classified && classified.kind === 'loopback';
    })
  );
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
