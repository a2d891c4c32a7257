import { createHash, randomBytes } from 'node:crypto';

/** SHA-256 of a high-entropy token (codes, refresh tokens, client secrets): no salt needed at 256 bits. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}

/** A fresh 256-bit token, base64url. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}
