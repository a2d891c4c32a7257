import { WEBHOOK_RETRY_DEFAULTS } from '@gateway/core';

export interface RetrySettings {
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
  timeoutMs: number;
}

export function retrySettings(retry: Partial<RetrySettings> | undefined): RetrySettings {
  return { ...WEBHOOK_RETRY_DEFAULTS, ...retry };
}

/**
 * `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date; undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The wait before attempt `failedAttempts + 1`: the receiver's Retry-After when it gave one, else exponential
 * backoff with full jitter (uniform in [0, min(cap, initial × 2^(failedAttempts − 1))]); both capped.
 */
export function retryDelayMs(
  settings: RetrySettings,
  failedAttempts: number,
  retryAfterMs: number | undefined,
  random: () => number,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, settings.maxDelayMs);
  const ceiling = Math.min(settings.maxDelayMs, settings.initialDelayMs * 2 ** Math.max(0, failedAttempts - 1));
  return Math.floor(random() * ceiling);
}
