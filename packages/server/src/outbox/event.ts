import { CloudEvent, HTTP } from 'cloudevents';
import type { Receipt } from '@gateway/core';

/** The CloudEvents `type` of a receipted call. */
export const RECEIPT_EVENT_TYPE = 'io.service.call.receipted';
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

/**
 * The structured-mode body of a receipt's event for one endpoint, built by the `cloudevents` SDK. This runs
 * inside the receipt's transaction, so the SDK's schema validation (half the cost) is skipped here: every
 * attribute has a fixed shape, and the tests read the bodies back with `HTTP.toEvent`, which validates.
 */
export function receiptEventBody(receipt: Receipt, eventId: string, sequence: number): string {
  const event = new CloudEvent(
    {
      specversion: '1.0',
      id: eventId,
      type: RECEIPT_EVENT_TYPE,
      source: EVENT_SOURCE,
      ...(receipt.session ? { subject: receipt.session } : {}),
      time: receipt.time,
      datacontenttype: 'application/json',
      data: { tool: receipt.tool, outcome: receipt.outcome, receipt },
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
