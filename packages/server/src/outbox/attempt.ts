import type { Dispatcher } from 'undici';
import type { WebhookExhaustedAction } from '@gateway/core';
import { exchange, isExchangeTimeout } from '@gateway/runtime';
import { CLOUDEVENTS_CONTENT_TYPE } from './event.js';
import { parseRetryAfter, type RetrySettings } from './retry.js';
import { signatureHeaders } from './signature.js';

export interface DispatcherEndpoint {
  name: string;
  url: string;
  retry?: Partial<RetrySettings>;
  /**
   * When an event's attempts run out: `pause` (the default) stops the endpoint at it, in every process, until
   * it is resumed; `skip` marks it `failed` and goes on with the next.
   */
  onExhausted?: WebhookExhaustedAction;
  /** The signing secrets, current first; two during a rotation. Read per attempt (rotation without restart). */
  secrets(): Promise<readonly string[]> | readonly string[];
}

export interface AttemptResult {
  status: number | null;
  error: string | null;
  retryAfterMs: number | undefined;
}

const endpointUrls = new WeakMap<DispatcherEndpoint, URL>();
/** The endpoint's URL, parsed once. */
function endpointUrl(endpoint: DispatcherEndpoint): URL {
  let url = endpointUrls.get(endpoint);
  if (!url) {
    url = new URL(endpoint.url);
    endpointUrls.set(endpoint, url);
  }
  return url;
}

/**
 * One signed POST of an event to its endpoint (CloudEvents structured JSON, Standard Webhooks signature) and what
 * came of it: the status (null when no answer arrived), an error unless 2xx, and the receiver's Retry-After.
 */
export async function sendAttempt(
  agent: Dispatcher,
  endpoint: DispatcherEndpoint,
  settings: RetrySettings,
  event: { eventId: string; body: string },
  signal: AbortSignal,
  extraHeaders?: Readonly<Record<string, string>>,
): Promise<AttemptResult> {
  try {
    const secrets = await endpoint.secrets();
    const headers = {
      ...extraHeaders,
      'content-type': CLOUDEVENTS_CONTENT_TYPE,
      'user-agent': 'gateway-webhooks',
      ...signatureHeaders(secrets, event.eventId, new Date(), event.body),
    };
    // The receiver's answer body is not used: at most 64 KiB of it is read, the rest dropped.
    const response = await exchange({
      dispatcher: agent,
      url: endpointUrl(endpoint),
      method: 'POST',
      headers,
      body: event.body,
      timeoutMs: settings.timeoutMs,
      maxBodyBytes: 65_536,
      overLimit: 'ignore',
      // stop() cuts the attempt in flight (it stays pending, not counted); the timeout is the exchange's timer.
      signal,
    });
    const isAcknowledged = response.statusCode >= 200 && response.statusCode < 300;
    return {
      status: response.statusCode,
      error: isAcknowledged ? null : `HTTP ${response.statusCode}`,
      retryAfterMs: parseRetryAfter(response.headers['retry-after'], Date.now()),
    };
  } catch (error) {
    const typed = error as Error & { code?: string };
    const reason = isExchangeTimeout(error)
      ? `timed out after ${settings.timeoutMs} ms`
      : (typed.code ? `${typed.code}: ` : '') + typed.message;
    return { status: null, error: reason, retryAfterMs: undefined };
  }
}
