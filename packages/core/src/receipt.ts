/**
 * A receipt: what one governed call did, allowed or refused. Plain data, never secrets: arguments and results
 * appear only as keyed digests. `receipt-<n>` is leaf n of the receipt log's Merkle tree (RFC 9162).
 * docs/receipts.md documents every field.
 */
import { createHmac } from 'node:crypto';
import { canonicalJson } from './canonical.js';

export type ReceiptOutcome = 'allowed' | 'denied' | 'error';

export interface Receipt {
  /** `receipt-<n>`. */
  id: string;
  /** n: the leaf index in the receipt log. */
  index: number;
  /** When the call was received, ISO 8601 UTC with milliseconds. */
  time: string;
  /** `session-<n>`, or null when the caller had no session (never for a call that reached the pipeline). */
  session: string | null;
  /** The person who approved the session (their subject). */
  person: string | null;
  /** The OAuth client id of the MCP client. */
  clientId: string | null;
  /** The tool name the client asked for. */
  tool: string;
  /** The source the tool belongs to, when it resolved. */
  source: string | null;
  /** `publication-<n>` of the in-use publication, when the tool resolved. */
  publication: string | null;
  /** The operation's fingerprint (sha256:…), when the tool resolved. */
  fingerprint: string | null;
  /** The login used (`<source>/<scheme>`), never a secret. */
  login: string | null;
  outcome: ReceiptOutcome;
  /** The reason code for `denied` and `error` (a registered error code), null for `allowed`. */
  reason: string | null;
  /** The upstream's final status (HTTP status for OpenAPI tools), when it answered. */
  upstreamStatus: number | null;
  /** Milliseconds from receiving the call to its answer, rounded to 0.1 ms. */
  durationMs: number;
  /** `hmac-sha256:<hex>` of the canonical (RFC 8785) arguments, keyed with a vault secret. */
  argumentsDigest: string;
  /** `hmac-sha256:<hex>` of the canonical result, keyed likewise; null when there was no result. */
  resultDigest: string | null;
  /** The arguments themselves, only when `receipts.storeArguments: true` in gateway.yaml. */
  arguments?: unknown;
}

/** The bytes of a receipt as a leaf of the log (RFC 8785 canonical JSON, UTF-8): what the leaf hash covers. */
export function receiptLeafBytes(receipt: Receipt): Buffer {
  return Buffer.from(canonicalJson(receipt), 'utf8');
}

/** `hmac-sha256:<hex>` of a JSON value's canonical form, keyed so small value spaces cannot be guessed. */
export function keyedDigest(key: Uint8Array, value: unknown): string {
  return `hmac-sha256:${createHmac('sha256', key).update(canonicalJson(value), 'utf8').digest('hex')}`;
}
