import { Webhook } from 'standardwebhooks';
import { GatewayError, type WebhookEndpointConfig } from '@gateway/core';
import type { Vault } from '@gateway/runtime';

/** How long a secret read from the vault is reused before it is read again (rotation takes effect within). */
export const SECRET_CACHE_MS = 30_000;

async function readSecret(vault: Vault, endpoint: string, name: string, key: string): Promise<string> {
  const value = await vault.get(name);
  if (value === undefined) {
    throw new GatewayError('WEBHOOK_SECRET_MISSING', `webhooks.${endpoint}.${key}: the vault has no secret named '${name}'`);
  }
  try {
    new Webhook(value);
  } catch {
    // Never echo the value: it is a secret even when malformed.
    throw new GatewayError(
      'WEBHOOK_SECRET_INVALID',
      `webhooks.${endpoint}.${key}: the vault secret '${name}' is not a Standard Webhooks secret (whsec_ followed by base64)`,
    );
  }
  return value;
}

/**
 * The signing secrets of an endpoint, current first, then the previous one while a rotation overlaps
 * (`previousSecret` listed and `previousSecretUntil`, when given, not yet passed).
 */
export async function endpointSecrets(vault: Vault, name: string, config: WebhookEndpointConfig, now = Date.now()): Promise<string[]> {
  const secrets = [await readSecret(vault, name, config.secret, 'secret')];
  const until = config.previousSecretUntil ? Date.parse(config.previousSecretUntil) : Number.POSITIVE_INFINITY;
  if (config.previousSecret && now < until) secrets.push(await readSecret(vault, name, config.previousSecret, 'previousSecret'));
  return secrets;
}

/**
 * An endpoint's secrets as the dispatcher reads them on every attempt: read now (a missing or malformed secret
 * stops the start with its name), then from the vault again at most every SECRET_CACHE_MS.
 */
export async function cachedEndpointSecrets(
  vault: Vault,
  name: string,
  config: WebhookEndpointConfig,
): Promise<() => Promise<readonly string[]>> {
  let cached = { secrets: await endpointSecrets(vault, name, config), readAt: Date.now() };
  return async () => {
    if (Date.now() - cached.readAt < SECRET_CACHE_MS) return cached.secrets;
    cached = { secrets: await endpointSecrets(vault, name, config), readAt: Date.now() };
    return cached.secrets;
  };
}
