/**
 * The `requestState` of a "a person must act first" answer (MCP 2026-07-28 › multi round-trip requests): an
 * opaque string the client echoes byte for byte on its retry. The gateway seals what the retry must match
 * (the session, its person, the tool, the operation's fingerprint, the keyed digest of the arguments), an
 * expiry and a nonce, with an HMAC-SHA-256 whose key only the gateway holds (the vault; never the database).
 * The spec asks that state influencing authorization be bound to the user and integrity-protected: a client
 * can read the claims (base64url JSON) but change none of them. Single use is the server's part: it remembers
 * spent nonces until they expire (calls/request-states.ts).
 *
 * Not the SDK's `createRequestStateCodec`: its failures are answered inside the SDK before the handler runs,
 * so they would be neither decided by the call policy nor receipted with a reason of their own.
 */
import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';

export interface RequestStateClaims {
  /** `session-<n>`. */
  session: string;
  /** The session's person (subject). */
  person: string;
  tool: string;
  fingerprint: string;
  /** The keyed digest of the canonical arguments (the receipt log's `argumentsDigest`). */
  argumentsDigest: string;
  /** Epoch milliseconds after which the state is refused. */
  expiresAt: number;
  /** Random, unique per state: what single use is enforced on (it is also the elicitation id). */
  nonce: string;
}

export type RequestStateRefusal = 'REQUEST_STATE_INVALID' | 'REQUEST_STATE_EXPIRED';

export type OpenedRequestState = { ok: true; claims: RequestStateClaims } | { ok: false; reason: RequestStateRefusal; message: string };

const VERSION = 'v1';

function tag(key: KeyObject, payload: string): Buffer {
  return createHmac('sha256', key).update(`${VERSION}.${payload}`).digest();
}

/** `v1.<base64url claims JSON>.<base64url HMAC>`. */
export function sealRequestState(claims: RequestStateClaims, key: KeyObject): string {
  const payload = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');
  return `${VERSION}.${payload}.${tag(key, payload).toString('base64url')}`;
}

/**
 * Opens a state and checks it against the retry: the tag first (a changed byte anywhere is
 * REQUEST_STATE_INVALID), then the binding (another session, person, tool, operation or other arguments:
 * REQUEST_STATE_INVALID), then the expiry (REQUEST_STATE_EXPIRED). Spent nonces are the caller's to check.
 */
export function openRequestState(
  text: string,
  key: KeyObject,
  expected: Omit<RequestStateClaims, 'expiresAt' | 'nonce'>,
  now: number,
): OpenedRequestState {
  const invalid = (why: string): OpenedRequestState => ({
    ok: false,
    reason: 'REQUEST_STATE_INVALID',
    message: `the requestState of this retry is not valid (${why}); call the tool again without it`,
  });
  const parts = text.split('.');
  if (parts.length !== 3 || parts[0] !== VERSION) return invalid('not a state this gateway issued');
  const [, payload, signature] = parts as [string, string, string];
  const given = Buffer.from(signature, 'base64url');
  const wanted = tag(key, payload);
  if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) return invalid('its integrity check failed');
  let claims: RequestStateClaims;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as RequestStateClaims;
  } catch {
    return invalid('unreadable');
  }
  for (const name of ['session', 'person', 'tool', 'fingerprint', 'argumentsDigest'] as const) {
    if (claims[name] !== expected[name]) return invalid(`issued for another ${name === 'argumentsDigest' ? 'set of arguments' : name}`);
  }
  if (typeof claims.expiresAt !== 'number' || claims.expiresAt <= now) {
    return {
      ok: false,
      reason: 'REQUEST_STATE_EXPIRED',
      message: 'the requestState of this retry has expired; call the tool again without it',
    };
  }
  return { ok: true, claims };
}
