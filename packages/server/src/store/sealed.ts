import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/**
 * A value only the holder of `secret` can read, for the ephemeral state port (./ephemeral-state.ts) when it is
 * shared: the entry is named by sha256(secret) and sealed with AES-256-GCM under a key derived from it (HKDF, with
 * the entry's purpose as its info). Its users: a browser session, sealed with its cookie
 * (authorization/signin/browser-sessions.ts), and a per-person login's linking attempt, sealed with its `state`
 * (credentials/person/linking.ts). The database (with workers or replicas) thus never holds a sign-in credential,
 * CSRF token or PKCE verifier in the clear.
 */
export type SealPurpose = 'browser-session' | 'link-attempt';

export function sealedKey(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

function keyFor(secret: string, purpose: SealPurpose): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'gateway-shared-ephemeral', purpose, 32));
}

export function seal(purpose: SealPurpose, secret: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(secret, purpose), iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [iv, cipher.getAuthTag(), body].map((part) => part.toString('base64url')).join('.');
}

export function unseal(purpose: SealPurpose, secret: string, sealed: string): string | undefined {
  try {
    const [iv, tag, body] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
    const decipher = createDecipheriv('aes-256-gcm', keyFor(secret, purpose), iv!);
    decipher.setAuthTag(tag!);
    return Buffer.concat([decipher.update(body!), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
