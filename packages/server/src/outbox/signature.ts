import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * Signs one attempt's `id.timestamp.body`: returns the base64 HMAC-SHA256 (without the `v1,` prefix).
 * node:crypto (OpenSSL) instead of the `standardwebhooks` package's JavaScript SHA-256, many times faster on
 * the path of every delivery (figures: docs/performance.md, "Webhook signatures with node:crypto").
 * signature.test.ts proves the two agree byte for byte.
 */
type Signer = (id: string, seconds: string, body: string) => string;

// Parsing a secret decodes base64; keep one signer per secret (a handful at most).
const signers = new Map<string, Signer & { kind?: 'node:crypto' | 'package' }>();

/** The Standard Webhooks secret prefix (the package keeps its own copy private). */
const SECRET_PREFIX = 'whsec_';

/** A fixed probe compared once per secret, so a key the two decoders read differently can never sign. */
const PROBE_ID = 'msg_probe';
const PROBE_TIME = new Date(1_700_000_000_000);
const PROBE_BODY = '{"probe":"é ✓ 😀"}';

function signerFor(secret: string): Signer & { kind?: 'node:crypto' | 'package' } {
  let signer = signers.get(secret);
  if (signer) return signer;
  // The package parses the secret (and refuses a malformed one, as it always did).
  const reference = new Webhook(secret);
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  const native: Signer = (id, seconds, body) => createHmac('sha256', key).update(`${id}.${seconds}.${body}`, 'utf8').digest('base64');
  const probeSeconds = String(Math.floor(PROBE_TIME.getTime() / 1000));
  // Node's base64 decoder is more lenient than the package's: should they ever read a secret differently,
  // sign that secret with the package (slower, never a different signature).
  const isSame = `v1,${native(PROBE_ID, probeSeconds, PROBE_BODY)}` === reference.sign(PROBE_ID, PROBE_TIME, PROBE_BODY);
  signer = isSame
    ? Object.assign(native, { kind: 'node:crypto' as const })
    : Object.assign(
        (id: string, seconds: string, body: string) => reference.sign(id, new Date(Number(seconds) * 1000), body).slice('v1,'.length),
        {
          kind: 'package' as const,
        },
      );
  if (signers.size > 64) signers.clear();
  signers.set(secret, signer);
  return signer;
}

/**
 * The Standard Webhooks headers of one attempt. With several secrets (a rotation in progress) the
 * `webhook-signature` header lists one `v1,<base64>` per secret, space-separated, as the specification
 * allows: a receiver holding either secret verifies.
 */
export function signatureHeaders(secrets: readonly string[], eventId: string, timestamp: Date, body: string): Record<string, string> {
  const seconds = String(Math.floor(timestamp.getTime() / 1000));
  return {
    'webhook-id': eventId,
    'webhook-timestamp': seconds,
    'webhook-signature': secrets.map((secret) => `v1,${signerFor(secret)(eventId, seconds, body)}`).join(' '),
  };
}

/** Which implementation signs for this secret (tests prove the fast one is in use and agrees). */
export function signerKind(secret: string): 'node:crypto' | 'package' {
  return signerFor(secret).kind!;
}
