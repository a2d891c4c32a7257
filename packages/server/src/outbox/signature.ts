import { Webhook } from 'standardwebhooks';

// Parsing a secret decodes base64; keep one Webhook per secret (a handful at most).
const signers = new Map<string, Webhook>();

function signerFor(secret: string): Webhook {
  let signer = signers.get(secret);
  if (!signer) {
    signer = new Webhook(secret);
    if (signers.size > 64) signers.clear();
    signers.set(secret, signer);
  }
  return signer;
}

/**
 * The Standard Webhooks headers of one attempt. With several secrets (a rotation in progress) the
 * `webhook-signature` header lists one `v1,<base64>` per secret, space-separated, as the specification
 * allows: a receiver holding either secret verifies.
 */
export function signatureHeaders(secrets: readonly string[], eventId: string, timestamp: Date, body: string): Record<string, string> {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => signerFor(secret).sign(eventId, timestamp, body)).join(' '),
  };
}
