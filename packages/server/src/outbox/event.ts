import { CloudEvent, HTTP } from 'cloudevents';
import {
  APPROVAL_EVENT_TYPE,
  CHECKPOINT_EVENT_TYPE,
  CONSOLE_EVENT_TYPE,
  RECEIPT_EVENT_TYPE,
  type Receipt,
  type ReceiptAction,
  type WebhookDataMode,
  type WebhookEventType,
} from '@gateway/core';

export { APPROVAL_EVENT_TYPE, CHECKPOINT_EVENT_TYPE, CONSOLE_EVENT_TYPE, RECEIPT_EVENT_TYPE };
/** The `type` of `gateway webhooks test`: outside the ordered stream, never given a sequence. */
export const TEST_EVENT_TYPE = 'io.service.webhook.test';
export const EVENT_SOURCE = 'service/audit';
/** The structured-mode media type, as the SDK's `HTTP.structured` emits it. */
export const CLOUDEVENTS_CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';

/**
 * The CloudEvents sequence extension is a String that MUST be lexicographically orderable: fixed-width
 * zero-padded decimal (20 digits holds any 64-bit count), so string order is numeric order.
 */
export function formatSequence(sequence: number): string {
  return String(sequence).padStart(20, '0');
}

/** The event id of a receipt for one endpoint: derived, so it is the same on every retry and replay. */
export function receiptEventId(receiptId: string, endpoint: string): string {
  return `evt_${receiptId}_${endpoint}`;
}

/** The event id of a signed checkpoint for one endpoint (one checkpoint per tree size). */
export function checkpointEventId(treeSize: number, endpoint: string): string {
  return `evt_checkpoint-${treeSize}_${endpoint}`;
}

/** The CloudEvents `type` of a receipt's event: a call's, or that of the action it records. */
export function receiptEventType(receipt: Receipt): WebhookEventType {
  const action = receipt.action;
  if (action === undefined) return RECEIPT_EVENT_TYPE;
  switch (action.kind) {
    case 'approval':
      return APPROVAL_EVENT_TYPE;
    case 'console':
      return CONSOLE_EVENT_TYPE;
    default: {
      const unreachable: never = action;
      throw new Error(`unknown receipt action ${String((unreachable as ReceiptAction).kind)}`);
    }
  }
}

/**
 * The `data` of an action receipt's event (docs/webhooks.md): an approval's `{ approval, decision, approver, tool,
 * receipt }`; a console action's `{ operator, action, target, receipt }`.
 */
function actionEventData(receipt: Receipt, action: ReceiptAction): Record<string, unknown> {
  switch (action.kind) {
    case 'approval':
      return { approval: action.approval, decision: action.decision, approver: action.approver, tool: receipt.tool, receipt: receipt.id };
    case 'console':
      return { operator: action.operator, action: action.action, target: action.target, receipt: receipt.id };
    default: {
      const unreachable: never = action;
      throw new Error(`unknown receipt action ${String((unreachable as ReceiptAction).kind)}`);
    }
  }
}

/**
 * A receipt event's `data`. The specification's shape by default: exactly `{ tool, outcome, receipt }` with
 * `receipt` the identifier `receipt-<n>` (an action receipt: its action's fields, actionEventData); `detailed`
 * adds the whole receipt under `details`.
 */
export function receiptEventData(receipt: Receipt, mode: WebhookDataMode = 'standard'): Record<string, unknown> {
  const data =
    receipt.action === undefined
      ? { tool: receipt.tool, outcome: receipt.outcome, receipt: receipt.id }
      : actionEventData(receipt, receipt.action);
  switch (mode) {
    case 'standard':
      return data;
    case 'detailed':
      return { ...data, details: receipt };
    default: {
      const unreachable: never = mode;
      throw new Error(`unknown webhook data mode ${String(unreachable)}`);
    }
  }
}

/**
 * The structured-mode body of a receipt's event for one endpoint, built by the `cloudevents` SDK. This runs
 * inside the receipt's transaction, so the SDK's schema validation (half the cost) is skipped here: every
 * attribute has a fixed shape, and the tests read the bodies back with `HTTP.toEvent`, which validates.
 */
export function receiptEventBody(receipt: Receipt, eventId: string, sequence: number, mode: WebhookDataMode = 'standard'): string {
  const event = new CloudEvent(
    {
      specversion: '1.0',
      id: eventId,
      type: receipt.action === undefined ? RECEIPT_EVENT_TYPE : receiptEventType(receipt),
      source: EVENT_SOURCE,
      ...(receipt.session ? { subject: receipt.session } : {}),
      time: receipt.time,
      datacontenttype: 'application/json',
      data: receiptEventData(receipt, mode),
      sequence: formatSequence(sequence),
    },
    false,
  );
  return HTTP.structured(event).body as string;
}

/** What a checkpoint event carries: the signed checkpoint of the receipt log (StoredCheckpoint's fields). */
export interface CheckpointEventSource {
  treeSize: number;
  rootHash: Buffer;
  /** The C2SP signed note; its first line is the origin. */
  note: string;
  createdAt: string;
}

/**
 * The body of a signed checkpoint's event: `data` is exactly `{ origin, treeSize, rootHash, note }`, the root
 * hash in standard base64 as the note writes it, and the whole signed note, so a receiver's copy of the
 * checkpoints can be verified on its own (`gateway receipts verify --checkpoints`) and shows a fork.
 */
export function checkpointEventBody(checkpoint: CheckpointEventSource, eventId: string, sequence: number): string {
  const origin = checkpoint.note.slice(0, checkpoint.note.indexOf('\n'));
  const event = new CloudEvent(
    {
      specversion: '1.0',
      id: eventId,
      type: CHECKPOINT_EVENT_TYPE,
      source: EVENT_SOURCE,
      time: checkpoint.createdAt,
      datacontenttype: 'application/json',
      data: { origin, treeSize: checkpoint.treeSize, rootHash: checkpoint.rootHash.toString('base64'), note: checkpoint.note },
      sequence: formatSequence(sequence),
    },
    false,
  );
  return HTTP.structured(event).body as string;
}

/** The body of a test event (`gateway webhooks test`). */
export function testEventBody(eventId: string, endpoint: string, time: Date): string {
  const event = new CloudEvent(
    {
      specversion: '1.0',
      id: eventId,
      type: TEST_EVENT_TYPE,
      source: EVENT_SOURCE,
      time: time.toISOString(),
      datacontenttype: 'application/json',
      data: { endpoint, test: true },
    },
    true,
  );
  return HTTP.structured(event).body as string;
}
