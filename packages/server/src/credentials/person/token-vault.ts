/**
 * Where a person's tokens for a per-person login live: one vault entry per person and login, never the
 * database, logs or receipts. The entry's name is a digest of the pair (vault names are `[A-Za-z0-9._-]`), so
 * `gateway secrets list` shows that tokens exist without naming whose.
 */
import { createHash } from 'node:crypto';
import type { PersonTokenSet, Vault } from '@gateway/runtime';

export interface StoredTokens extends PersonTokenSet {
  /** Epoch ms when this access token was obtained (its lifetime decides the refresh margin). */
  obtainedAt: number;
}

export function tokenSecretName(person: string, login: string): string {
  return `person-login.${createHash('sha256').update(`${person}\n${login}`).digest('base64url').slice(0, 32)}`;
}

export async function readTokens(vault: Vault, person: string, login: string): Promise<StoredTokens | undefined> {
  const text = await vault.get(tokenSecretName(person, login));
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as StoredTokens;
    return typeof parsed.accessToken === 'string' && typeof parsed.expiresAt === 'number' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

export async function writeTokens(vault: Vault, person: string, login: string, tokens: StoredTokens): Promise<void> {
  await vault.set(tokenSecretName(person, login), JSON.stringify(tokens));
}

export async function deleteTokens(vault: Vault, person: string, login: string): Promise<void> {
  await vault.delete(tokenSecretName(person, login)).catch(() => false);
}
