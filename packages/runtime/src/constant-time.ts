import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Constant-time equality of two secrets of any length: compares their SHA-256 digests, which are always
 * of equal length, so neither the content nor the length leaks through timing.
 */
export function secretsEqual(left: string, right: string): boolean {
  return timingSafeEqual(sha256(left), sha256(right));
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
