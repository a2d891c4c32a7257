/**
 * The `requestState`s of "a person must act first" answers (core/request-state.ts seals and opens them): issued
 * with a nonce and an expiry, and good for one retry. Spent nonces are remembered in this process until they
 * expire. With several replicas a retry may reach another one, so a shared store port (like the throttles')
 * must take this set's place before replicas serve "a person must act first" flows.
 */
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import type { Vault } from '@gateway/runtime';
import { keyedDigest, openRequestState, sealRequestState, type RequestStateClaims } from '@gateway/core';

/** How long a person has to act before the retry's state expires. */
export const REQUEST_STATE_TTL_MS = 10 * 60_000;

export type RequestStateCheck =
  | { ok: true; claims: RequestStateClaims }
  | { ok: false; reason: 'REQUEST_STATE_INVALID' | 'REQUEST_STATE_EXPIRED' | 'REQUEST_STATE_USED'; message: string };

export interface RequestStates {
  issue(claims: Omit<RequestStateClaims, 'expiresAt' | 'nonce'>, now: number): { requestState: string; nonce: string };
  /** Opens and checks a retry's state (binding, expiry, not spent yet); spends nothing. */
  check(text: string, expected: Omit<RequestStateClaims, 'expiresAt' | 'nonce'>, now: number): RequestStateCheck;
  /** Spends a state: false when it was spent meanwhile (two retries racing with the same state). */
  spend(claims: RequestStateClaims, now: number): boolean;
  /** A keyed digest of the arguments, for when there is no receipt log (whose digest is used otherwise). */
  argumentsDigest(argumentsValue: unknown): string;
}

/** `key`: at least 32 bytes from the vault; without one (tests, buildApp alone) a key for this process. */
export function createRequestStates(key?: Uint8Array): RequestStates {
  const secret: KeyObject = createSecretKey(key ?? randomBytes(32));
  /** Spent nonce → when its state expires (after that it would be refused as expired anyway). */
  const spent = new Map<string, number>();

  function forgetExpired(now: number): void {
    for (const [nonce, expiresAt] of spent) if (expiresAt <= now) spent.delete(nonce);
  }

  return {
    issue(claims, now) {
      const nonce = randomBytes(16).toString('base64url');
      return { requestState: sealRequestState({ ...claims, expiresAt: now + REQUEST_STATE_TTL_MS, nonce }, secret), nonce };
    },
    check(text, expected, now) {
      const opened = openRequestState(text, secret, expected, now);
      if (!opened.ok) return opened;
      if (spent.has(opened.claims.nonce)) {
        return {
          ok: false,
          reason: 'REQUEST_STATE_USED',
          message: 'the requestState of this retry was already used (each is good for one retry); call the tool again without it',
        };
      }
      return opened;
    },
    argumentsDigest: (argumentsValue) => keyedDigest(secret, argumentsValue),
    spend(claims, now) {
      if (spent.has(claims.nonce)) return false;
      if (spent.size >= 1024) forgetExpired(now);
      spent.set(claims.nonce, claims.expiresAt);
      return true;
    },
  };
}

/** The vault entry holding the key (created on first start; never in the database). */
export const REQUEST_STATE_KEY_SECRET = 'request-state-key';

/**
 * The key from the vault, created there on first start. A read-only vault (env, exec) without the entry gets
 * a key for this process, with a warning: states issued before a restart are then refused as invalid.
 */
export async function requestStateKey(vault: Vault, warn: (message: string) => void): Promise<Uint8Array> {
  const existing = await vault.get(REQUEST_STATE_KEY_SECRET);
  if (existing) return Buffer.from(existing, 'base64url');
  const created = randomBytes(32);
  try {
    await vault.set(REQUEST_STATE_KEY_SECRET, created.toString('base64url'));
  } catch {
    warn(
      `the ${vault.provider} vault has no '${REQUEST_STATE_KEY_SECRET}' and cannot store one: requestStates last until this process stops`,
    );
  }
  return created;
}
