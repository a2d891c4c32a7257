/**
 * How /mcp refuses a request for its token (RFC 6750 §3): the 401 body and its `WWW-Authenticate` challenge, and the
 * count of refusals by reason since the process started (`GET /admin/status` shows it).
 */
import type { McpAuthentication, McpCaller, McpRefusalReason } from '../calls/caller.js';

/** Quoted-string safe text for a WWW-Authenticate parameter (RFC 9110 §11.2 / RFC 6750 §3). */
function quoted(text: string): string {
  return text.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, ' ');
}

/**
 * Builds the 401 challenge: `resource_metadata` (RFC 9728 §5.1) always, so a client without a token can
 * discover where to get one; `error` only when a token was presented (RFC 6750 §3.1).
 */
export function bearerChallenge(resourceMetadataUrl: string, error?: { code: string; description: string; scope?: string }): string {
  const parameters = [`resource_metadata="${quoted(resourceMetadataUrl)}"`];
  if (error) parameters.push(`error="${error.code}"`, `error_description="${quoted(error.description)}"`);
  if (error?.scope) parameters.push(`scope="${quoted(error.scope)}"`);
  return `Bearer ${parameters.join(', ')}`;
}

/** Refused /mcp requests by reason since the process started (zero for reasons not seen yet). */
export type McpRefusalCounts = Record<McpRefusalReason, number>;

const REFUSAL_REASONS: readonly McpRefusalReason[] = [
  'no_token',
  'malformed_header',
  'invalid_token',
  'token_expired',
  'session_revoked',
  'session_expired',
];

export type McpRefusal = McpAuthentication & { ok: false };

export interface McpRefusals {
  /** A 401 for `reason`; `code` is the RFC 6750 error (none when no token was sent), `endedSession` the caller of an ended session. */
  refuse(reason: McpRefusalReason, code: string | undefined, description: string, endedSession?: McpCaller): McpRefusal;
  counts(): McpRefusalCounts;
}

export function createMcpRefusals(resourceMetadataUrl: string): McpRefusals {
  const refusalCounts = Object.fromEntries(REFUSAL_REASONS.map((reason) => [reason, 0])) as McpRefusalCounts;
  return {
    refuse(reason, code, description, endedSession) {
      refusalCounts[reason] += 1;
      return {
        ok: false,
        status: 401,
        headers: { 'WWW-Authenticate': bearerChallenge(resourceMetadataUrl, code ? { code, description } : undefined) },
        body: code ? { error: code, error_description: description } : { error: 'unauthorized', error_description: description },
        reason,
        ...(endedSession ? { endedSession } : {}),
      };
    },
    counts: () => ({ ...refusalCounts }),
  };
}
