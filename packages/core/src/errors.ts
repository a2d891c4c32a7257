/**
 * Every failure the product reports carries a stable `code` (listed in docs/errors.md) and a message a
 * user can act on. The `category` decides the CLI exit code (docs/cli.md) and the HTTP status family.
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

export interface GatewayErrorOptions {
  category?: ErrorCategory;
  /** Machine-readable details (never secrets). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class GatewayError extends Error {
  readonly code: string;
  readonly category: ErrorCategory;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: string, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.category = options.category ?? 'internal';
    this.details = options.details;
  }

  toJSON(): { code: string; category: ErrorCategory; message: string; details?: Record<string, unknown> } {
    return {
      code: this.code,
      category: this.category,
      message: this.message,
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

export function isGatewayError(value: unknown): value is GatewayError {
  return value instanceof GatewayError;
}

/** CLI exit codes per category (documented in docs/cli.md). 1 is reserved for "differences found". */
export const EXIT_CODES: Readonly<Record<ErrorCategory, number>> = {
  usage: 2,
  config: 3,
  document: 4,
  lock: 5,
  verification: 6,
  refused: 7,
  network: 8,
  auth: 9,
  internal: 70,
};
