/**
 * A receipt: what one governed call did, allowed or refused. Plain data, never secrets: arguments and results
 * appear only as keyed digests. `receipt-<n>` is leaf n of the receipt log's Merkle tree (RFC 9162).
 * docs/receipts.md documents every field.
 */
import { createHmac, type KeyObject } from 'node:crypto';
import { canonicalJson } from './canonical.js';

/** `action-required`: the decision answered "a person must act first" (docs/receipts.md › Outcomes). */
export type ReceiptOutcome = 'allowed' | 'denied' | 'action-required' | 'error';

/** What an operator did in the console (docs/receipts.md › Action receipts). */
export type ConsoleActionName = 'session.revoke' | 'webhook.resume' | 'webhook.replay' | 'login.unlink';

/**
 * A decision a person took (or an approval's expiry), receipted in the same log as the calls: a receipt with
 * `action` records it instead of a call. Names only, never a secret.
 */
export type ReceiptAction =
  | {
      kind: 'approval';
      /** `approval-…`: the approval decided or expired. */
      approval: string;
      decision: 'approved' | 'denied' | 'expired';
      /** The approver's name; null for an expiry (nobody decided). */
      approver: string | null;
    }
  | {
      kind: 'console';
      action: ConsoleActionName;
      /** The signed-in operator's name. */
      operator: string;
      /** What the action was taken on: `session-<n>`, a webhook endpoint's name, `<person> <login>`. */
      target: string;
    };

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
  /** A call that ran on a one-call approval: its id (`approval-…`); absent otherwise. */
  approval?: string;
  /** Set on a receipt of a person's decision or a console action (not of a call); absent on call receipts. */
  action?: ReceiptAction;
}

/** The bytes of a receipt as a leaf of the log (RFC 8785 canonical JSON, UTF-8): what the leaf hash covers. */
export function receiptLeafBytes(receipt: Receipt): Buffer {
  return Buffer.from(receiptCanonicalJson(receipt), 'utf8');
}

/**
 * RFC 8785 canonical JSON, written for the per-call path (about five times faster than the general
 * `canonicalJson`, which receipt.test.ts proves it equals): keys sorted by UTF-16 code units (§3.2.3, what
 * the default sort does), strings and numbers as ECMAScript's JSON.stringify writes them (§3.2.2.2-3).
 * Values JSON cannot hold are refused like canonicalJson refuses them.
 */
export function receiptCanonicalJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('a non-finite number cannot be canonicalised as JSON');
      return JSON.stringify(value);
    case 'object': {
      if (value === null) return 'null';
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return canonicalJson(value);
      if (Array.isArray(value)) {
        let text = '[';
        for (let index = 0; index < value.length; index += 1) {
          if (index > 0) text += ',';
          const item = value[index] as unknown;
          text += item === undefined || typeof item === 'function' || typeof item === 'symbol' ? 'null' : receiptCanonicalJson(item);
        }
        return `${text}]`;
      }
      const object = value as Record<string, unknown>;
      const keys = Object.keys(object).sort();
      let text = '{';
      let isFirst = true;
      for (const key of keys) {
        const member = object[key];
        if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
        text += `${isFirst ? '' : ','}${JSON.stringify(key)}:${receiptCanonicalJson(member)}`;
        isFirst = false;
      }
      return `${text}}`;
    }
    default:
      return canonicalJson(value);
  }
}

/** The receipt numbered `index` (leaf n of the log), always with the same fields in the same order. */
export function receiptOf(index: number, draft: Omit<Receipt, 'id' | 'index'>): Receipt {
  const receipt: Receipt = {
    id: `receipt-${index}`,
    index,
    time: draft.time,
    session: draft.session,
    person: draft.person,
    clientId: draft.clientId,
    tool: draft.tool,
    source: draft.source,
    publication: draft.publication,
    fingerprint: draft.fingerprint,
    login: draft.login,
    outcome: draft.outcome,
    reason: draft.reason,
    upstreamStatus: draft.upstreamStatus,
    durationMs: draft.durationMs,
    argumentsDigest: draft.argumentsDigest,
    resultDigest: draft.resultDigest,
  };
  if (draft.arguments !== undefined) receipt.arguments = draft.arguments;
  if (draft.approval !== undefined) receipt.approval = draft.approval;
  if (draft.action !== undefined) receipt.action = draft.action;
  return receipt;
}

const NOT_SCALAR = Symbol('not a JSON string, null or finite number');

/** JSON text of a receipt field that is a string, null or a finite number (as RFC 8785 writes them). */
function scalar(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) return JSON.stringify(value);
  throw NOT_SCALAR;
}

/**
 * The leaf text of a receipt made by `receiptOf` (its fields and no others): `receiptCanonicalJson(receipt)`,
 * with the keys written in their sorted order instead of sorting them for every call (receipt.test.ts proves
 * the two equal). A field of another type than Receipt declares (a hole in the types) takes the general path.
 */
export function receiptLeafText(receipt: Receipt): string {
  const r = receipt;
  // An action receipt (rare, never on the call path) takes the general path.
  if (r.action !== undefined) return receiptCanonicalJson(r);
  try {
    return (
      `{${r.approval === undefined ? '' : `"approval":${scalar(r.approval)},`}` +
      `${r.arguments === undefined ? '' : `"arguments":${receiptCanonicalJson(r.arguments)},`}` +
      `"argumentsDigest":${scalar(r.argumentsDigest)},"clientId":${scalar(r.clientId)},` +
      `"durationMs":${scalar(r.durationMs)},"fingerprint":${scalar(r.fingerprint)},"id":${scalar(r.id)},` +
      `"index":${scalar(r.index)},"login":${scalar(r.login)},"outcome":${scalar(r.outcome)},` +
      `"person":${scalar(r.person)},"publication":${scalar(r.publication)},"reason":${scalar(r.reason)},` +
      `"resultDigest":${scalar(r.resultDigest)},"session":${scalar(r.session)},"source":${scalar(r.source)},` +
      `"time":${scalar(r.time)},"tool":${scalar(r.tool)},"upstreamStatus":${scalar(r.upstreamStatus)}}`
    );
  } catch (error) {
    if (error !== NOT_SCALAR) throw error;
    return receiptCanonicalJson(r);
  }
}

/**
 * `hmac-sha256:<hex>` of a JSON value's canonical form, keyed so small value spaces cannot be guessed. The
 * receipt log passes a KeyObject made once, so each call skips importing the raw key.
 */
export function keyedDigest(key: Uint8Array | KeyObject, value: unknown): string {
  return `hmac-sha256:${createHmac('sha256', key).update(receiptCanonicalJson(value), 'utf8').digest('hex')}`;
}
