/**
 * Why an operation is `unsupported`. The codes are stable (they end up in tools.lock and in reviews) and are
 * listed with their meaning in docs/lockfile.md ("Support status"). When several apply, the first in this order is
 * recorded.
 */
export const UNSUPPORTED_REASON_CODES = [
  'TOOL_TEXT_HIDDEN_CHARACTERS',
  'REFERENCE_UNRESOLVABLE',
  'TOOL_SCHEMA_TOO_COMPLEX',
  'INPUT_SCHEMA_INVALID',
  'PARAMETER_UNSUPPORTED',
  'MEDIA_TYPE_UNSUPPORTED',
  'SECURITY_SCHEME_UNSUPPORTED',
  'STREAMING_RESPONSE',
  'SERVER_URL_MISSING',
  'TOOL_DESCRIPTION_TOO_LONG',
] as const;

export type UnsupportedReasonCode = (typeof UNSUPPORTED_REASON_CODES)[number];
