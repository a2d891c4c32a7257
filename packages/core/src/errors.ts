/**
 * Every failure the product reports carries a stable `code` and a message a user can act on. Codes are declared
 * once, in the registry (error-codes.ts), with their category; the category decides the CLI exit code
 * (EXIT_CODES, docs/cli.md) and the HTTP status family. Throwing a code the registry does not declare is a type
 * error.
 */
import { ERRORS } from './error-codes.js';
import type { ErrorCategory, ErrorSpec } from './error-spec.js';

export { ERROR_AREAS, type ErrorArea, type ErrorCategory, type ErrorSpec } from './error-spec.js';

/** A code the registry declares; the only kind a GatewayError carries. */
export type ErrorCode = keyof typeof ERRORS;

export { ERRORS };

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERRORS, value);
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

/** What each category means (the first table of docs/errors.md). */
export const CATEGORY_MEANINGS: Readonly<Record<ErrorCategory, string>> = {
  usage: 'bad flags or arguments',
  config: 'gateway.yaml missing or invalid',
  document: 'an OpenAPI document that cannot be read, parsed, validated, or is refused',
  lock: 'tools.lock missing, unreadable, or without what the command needs',
  verification: 'signatures, fingerprints, names or config consistency failed',
  refused: 'a request the rules forbid',
  network: 'a remote party could not be reached',
  auth: 'authentication or authorisation failed',
  internal: 'a bug: rerun with `GATEWAY_DEBUG=1` and report it',
};

export interface GatewayErrorOptions {
  /** Machine-readable details (never secrets). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly category: ErrorCategory;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    // A code from outside the type system (e.g. read off the wire) that is not registered counts as a bug.
    this.category = (ERRORS as Record<string, ErrorSpec | undefined>)[code]?.category ?? 'internal';
    this.details = options.details;
  }

  toJSON(): { code: ErrorCode; category: ErrorCategory; message: string; details?: Record<string, unknown> } {
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
