import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/**
 * A value only the holder of `secret` can read: the row is named by sha256(secret) and sealed with
 * AES-256-GCM under a key derived from it (HKDF). A browser session's entry thus holds nothing usable without
 * the browser's cookie: the database (with workers) never holds a sign-in credential or CSRF token in the clear.
 */
export function sealedKey(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

function keyFor(secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'gateway-shared-ephemeral', 'browser-session', 32));
}

export function seal(secret: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(secret), iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [iv, cipher.getAuthTag(), body].map((part) => part.toString('base64url')).join('.');
}

export function unseal(secret: string, sealed: string): string | undefined {
  try {
    const [iv, tag, body] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
    const decipher = createDecipheriv('aes-256-gcm', keyFor(secret), iv!);
    decipher.setAuthTag(tag!);
    return Buffer.concat([decipher.update(body!), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
