/**
 * The shape of one registered error code (its category, docs section and meaning): declared apart from errors.ts
 * so the registry (error-codes.ts) and the errors built from it (errors.ts) do not import each other.
 */

export type ErrorCategory =
  | 'usage' // bad flags or arguments
  | 'config' // gateway.yaml missing or invalid
  | 'document' // an OpenAPI document that cannot be read, parsed, validated or is refused
  | 'lock' // tools.lock missing, unreadable or not matching its schema
  | 'verification' // signatures, fingerprints, names or config consistency failed
  | 'refused' // a request the rules forbid (selecting an unsupported operation, untrusted key, stale proposal…)
  | 'network' // a remote party could not be reached
  | 'auth' // authentication or authorisation failed
  | 'internal'; // a bug

/** The sections of docs/errors.md, in the order they appear there. */
export const ERROR_AREAS = {
  config: 'Configuration and usage',
  import: 'Importing OpenAPI documents',
  mcp: 'MCP sources ([sources-mcp.md](sources-mcp.md))',
  lock: 'The lockfile, review and publishing',
  verification: 'Verification (`gateway verify`, and the server before loading a lock)',
  serving: 'Serving and executing tools',
  credentials: 'Credentials and the vault',
  admin: 'Admin API and `gateway status`',
  receipts: 'Calls and receipts ([receipts.md](receipts.md))',
  webhooks: 'Webhooks ([webhooks.md](webhooks.md))',
  authorization: 'Sign-in, consent and sessions',
} as const;

export type ErrorArea = keyof typeof ERROR_AREAS;

/** One registered code: what it means, where docs/errors.md lists it, and its category (hence its exit code). */
export interface ErrorSpec {
  readonly category: ErrorCategory;
  readonly area: ErrorArea;
  /** One line for docs/errors.md (Markdown). */
  readonly meaning: string;
  /**
   * The HTTP status a server answer with this code has (problem+json), when it is always the same; absent when the
   * code is not answered over HTTP or its status depends on the case (the handler then names it).
   */
  readonly status?: number;
}
