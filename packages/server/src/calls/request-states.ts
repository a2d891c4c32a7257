/**
 * The `requestState`s of "a person must act first" answers (core/request-state.ts seals and opens them): issued
 * with a nonce and an expiry, and good for one retry. A spent nonce is claimed in the ephemeral state port
 * (store/ephemeral-state.ts) until its state expires: this process's memory, or, with workers, the database they
 * share, so a retry replayed to another worker is refused too.
 */
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { isVaultReadOnly, type Vault } from '@gateway/runtime';
import { GatewayError, keyedDigest, openRequestState, sealRequestState, type RequestStateClaims } from '@gateway/core';
import type { EphemeralState } from '../store/ephemeral-state.js';
import { MemoryEphemeralState } from '../store/memory/ephemeral-state.js';

/** How long a person has to act before the retry's state expires. */
export const REQUEST_STATE_TTL_MS = 10 * 60_000;

/** The ephemeral state kind of spent nonces. */
const SPENT = 'request-state-spent';

/** Why a spent state is refused (REQUEST_STATE_USED). */
export const REQUEST_STATE_USED_MESSAGE =
  'the requestState of this retry was already used (each is good for one retry); call the tool again without it';

export type RequestStateCheck =
  | { ok: true; claims: RequestStateClaims }
  | { ok: false; reason: 'REQUEST_STATE_INVALID' | 'REQUEST_STATE_EXPIRED'; message: string };

export interface RequestStates {
  issue(claims: Omit<RequestStateClaims, 'expiresAt' | 'nonce'>, now: number): { requestState: string; nonce: string };
  /**
   * Opens and checks a retry's state (integrity, binding, expiry); spends nothing. Synchronous, on the decision's
   * path: whether it was spent already is `spend`'s answer.
   */
  check(text: string, expected: Omit<RequestStateClaims, 'expiresAt' | 'nonce'>, now: number): RequestStateCheck;
  /**
   * Spends a state, once across every process sharing the store: false when it was spent before (a replay, or
   * two retries racing with the same state).
   */
  spend(claims: RequestStateClaims, now: number): Promise<boolean>;
  /** A keyed digest of the arguments, for when there is no receipt log (whose digest is used otherwise). */
  argumentsDigest(argumentsValue: unknown): string;
}

/**
 * `key`: at least 32 bytes from the vault; without one (tests, buildApp alone) a key for this process. `state`:
 * where spent nonces are claimed (the workers' shared store with `serve --workers`); this process's memory if none.
 */
export function createRequestStates(key?: Uint8Array, state: EphemeralState = new MemoryEphemeralState()): RequestStates {
  const secret: KeyObject = createSecretKey(key ?? randomBytes(32));

  return {
    issue(claims, now) {
      const nonce = randomBytes(16).toString('base64url');
      return { requestState: sealRequestState({ ...claims, expiresAt: now + REQUEST_STATE_TTL_MS, nonce }, secret), nonce };
    },
    check: (text, expected, now) => openRequestState(text, secret, expected, now),
    argumentsDigest: (argumentsValue) => keyedDigest(secret, argumentsValue),
    // Kept until the state expires: after that it is refused as expired anyway.
    spend: (claims, now) => state.claimOnce(SPENT, claims.nonce, claims.expiresAt, now),
  };
}

/** The vault entry holding the key (created on first start; never in the database). */
export const REQUEST_STATE_KEY_SECRET = 'request-state-key';

/**
 * The key from the vault, created there on first start. A read-only vault (env, exec) without the entry gets
 * a key for this process, with a warning: states issued before a restart are then refused as invalid.
 * `requireShared` (`gateway serve --workers N`, replicas on PostgreSQL): several processes answer one client, so a key of this
 * process alone would make the others refuse its states (and digest arguments differently): refused instead.
 */
export async function requestStateKey(
  vault: Vault,
  warn: (message: string) => void,
  options: { requireShared?: boolean } = {},
): Promise<Uint8Array> {
  const existing = await vault.get(REQUEST_STATE_KEY_SECRET);
  if (existing) return Buffer.from(existing, 'base64url');
  const created = randomBytes(32);
  try {
    // Processes starting together on an empty vault each generate a key: the one stored first is everyone's.
    return Buffer.from(await vault.create(REQUEST_STATE_KEY_SECRET, created.toString('base64url')), 'base64url');
  } catch (error) {
    if (!isVaultReadOnly(error)) throw error;
    if (options.requireShared) {
      throw new GatewayError(
        'REQUEST_STATE_KEY_NOT_SHARED',
        `processes that serve together (--workers, or replicas on PostgreSQL) need the request-state key in the vault, ` +
          `but the ${vault.provider} vault has no '${REQUEST_STATE_KEY_SECRET}' and cannot store one: use a writable vault ` +
          `they share (file for --workers, postgres for replicas), or provide '${REQUEST_STATE_KEY_SECRET}' ` +
          '(32 random bytes, base64url; docs/server.md)',
      );
    }
    warn(
      `the ${vault.provider} vault has no '${REQUEST_STATE_KEY_SECRET}' and cannot store one: requestStates last until this process stops`,
    );
  }
  return created;
}
