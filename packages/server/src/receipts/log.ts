import { createSecretKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import {
  DEFAULT_CHECKPOINT_EVERY_RECEIPTS,
  DEFAULT_CHECKPOINT_EVERY_SECONDS,
  formatCheckpoint,
  GatewayError,
  keyedDigest,
  privateKeyFromPem,
  rawPublicKey,
  signNote,
  verifierKey,
  type LoadedConfig,
  type Receipt,
} from '@gateway/core';
import type { Vault } from '@gateway/runtime';
import type { ReceiptDraft, ReceiptHook, ReceiptStore, StoredCheckpoint } from './store.js';

/** Vault entries of the receipt log (created on first start when the vault can store them). */
export const RECEIPTS_DIGEST_KEY_SECRET = 'receipts-digest-key';
export const RECEIPTS_SIGNING_KEY_SECRET = 'receipts-signing-key';

/** What the pipeline knows about a call; the log adds the digests, the number and the signature cadence. */
export type ReceiptFields = Omit<ReceiptDraft, 'argumentsDigest' | 'resultDigest' | 'arguments'> & {
  argumentsValue: unknown;
  /** `argumentsDigest(argumentsValue)`, when the caller made it ahead (while the upstream worked). */
  argumentsDigest?: string;
  /** The tool result, or undefined when there was none (refusals). */
  resultValue: unknown;
};

export interface ReceiptLog {
  readonly store: ReceiptStore;
  /** The checkpoint origin line, also the signed-note key name. */
  readonly origin: string;
  /** The C2SP verifier key of the current signing key (public). */
  readonly verifierKey: string;
  /** The keyed digest of a call's arguments, as `record` stores it. */
  argumentsDigest(argumentsValue: unknown): string;
  /**
   * Appends the receipt (and runs the hooks) and resolves once it has committed. `othersInFlight`: other
   * calls are running, so their receipts may come in the same turn of the event loop; the commit then waits
   * for the end of that turn (`setImmediate`) and takes them all in one transaction (group commit). Alone,
   * it commits as soon as the current code yields (a microtask): no wait for a turn a sequential client would
   * only lose time in. Either way a call is answered only after its receipt is in the database.
   */
  record(fields: ReceiptFields, options?: { othersInFlight?: boolean }): Promise<Receipt>;
  /** Hooks run inside each append's transaction (the webhook outbox registers one). */
  addHook(hook: ReceiptHook): void;
  /** Signs a checkpoint of the current tree when it grew since the last one; returns the latest. */
  checkpoint(): StoredCheckpoint | undefined;
  /** Commits what is queued, stops the timer and signs a final checkpoint. */
  close(): void;
}

export interface ReceiptLogOptions {
  store: ReceiptStore;
  vault: Vault;
  loaded: LoadedConfig;
  hooks?: ReceiptHook[];
  warn?: (message: string) => void;
  now?: () => Date;
}

/**
 * A secret from the vault, created there on first start. A read-only vault (env, exec) without the entry
 * gets a key that lives as long as this process, with a warning: digests then differ across restarts, and
 * checkpoints after a restart are signed by a new key (each checkpoint names its verifier key).
 */
async function vaultSecret(vault: Vault, name: string, create: () => string, warn: (message: string) => void): Promise<string> {
  const existing = await vault.get(name);
  if (existing) return existing;
  const value = create();
  try {
    await vault.set(name, value);
  } catch {
    warn(`the ${vault.provider} vault has no '${name}' and cannot store one: using a key that lasts until this process stops`);
  }
  return value;
}

export function defaultReceiptOrigin(loaded: LoadedConfig): string {
  return loaded.config.receipts?.origin ?? `${new URL(loaded.config.gateway.url).host}/receipts`;
}

export async function createReceiptLog(options: ReceiptLogOptions): Promise<ReceiptLog> {
  const { store, vault, loaded } = options;
  const warn = options.warn ?? (() => undefined);
  const now = options.now ?? (() => new Date());
  const settings = loaded.config.receipts ?? {};
  const storesArguments = settings.storeArguments === true;
  const everyReceipts = settings.checkpoint?.everyReceipts ?? DEFAULT_CHECKPOINT_EVERY_RECEIPTS;
  const everySeconds = settings.checkpoint?.everySeconds ?? DEFAULT_CHECKPOINT_EVERY_SECONDS;
  const origin = defaultReceiptOrigin(loaded);

  const digestKeyBytes = Buffer.from(
    await vaultSecret(vault, RECEIPTS_DIGEST_KEY_SECRET, () => randomBytes(32).toString('base64url'), warn),
    'base64url',
  );
  if (digestKeyBytes.length < 16) {
    throw new GatewayError(
      'RECEIPTS_KEY_INVALID',
      `the vault entry '${RECEIPTS_DIGEST_KEY_SECRET}' must hold at least 16 bytes (base64url)`,
    );
  }
  const digestKey = createSecretKey(digestKeyBytes);
  const signingPem = await vaultSecret(
    vault,
    RECEIPTS_SIGNING_KEY_SECRET,
    () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    warn,
  );
  let signingKey: KeyObject;
  try {
    signingKey = privateKeyFromPem(signingPem);
    if (signingKey.asymmetricKeyType !== 'ed25519') throw new Error('not Ed25519');
  } catch {
    throw new GatewayError(
      'RECEIPTS_KEY_INVALID',
      `the vault entry '${RECEIPTS_SIGNING_KEY_SECRET}' is not an Ed25519 private key (PKCS#8 PEM)`,
    );
  }
  const publicVerifierKey = verifierKey(origin, rawPublicKey(signingKey));
  const hooks = [...(options.hooks ?? [])];
  let checkpointedSize = store.latestCheckpoint()?.treeSize ?? 0;

  function checkpoint(): StoredCheckpoint | undefined {
    const head = store.head();
    if (head.size === 0 || head.size <= checkpointedSize) return store.latestCheckpoint();
    const note = signNote(formatCheckpoint({ origin, size: head.size, rootHash: head.rootHash }), origin, signingKey);
    const stored: StoredCheckpoint = {
      treeSize: head.size,
      rootHash: head.rootHash,
      note,
      verifierKey: publicVerifierKey,
      createdAt: now().toISOString(),
    };
    store.addCheckpoint(stored);
    checkpointedSize = head.size;
    return stored;
  }

  // Every T seconds with new receipts; unref'd so the timer never keeps the process alive.
  const timer = setInterval(
    () => {
      try {
        checkpoint();
      } catch (error) {
        warn(`receipt checkpoint failed: ${(error as Error).message}`);
      }
    },
    Math.round(everySeconds * 1000),
  );
  timer.unref();

  // Group commit: receipts recorded while other calls run (say, the answers of several upstream calls read in
  // one poll phase) are appended in one transaction when the turn ends; a receipt alone, once the code yields.
  // flush runs on its own (a microtask or an immediate): it never throws, every outcome goes to a promise.
  const queue: Array<{ draft: ReceiptDraft; resolve: (receipt: Receipt) => void; reject: (error: unknown) => void }> = [];
  let isTurnFlushScheduled = false;
  let isSoonFlushScheduled = false;
  function flush(): void {
    if (queue.length === 0) return;
    const batch = queue.splice(0);
    let lastIndex = -1;
    try {
      const receipts = store.appendBatch(
        batch.map((item) => item.draft),
        hooks,
      );
      for (const [index, item] of batch.entries()) item.resolve(receipts[index]!);
      lastIndex = receipts.at(-1)!.index;
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      // The whole transaction rolled back: write them one by one, so one receipt that cannot be written
      // (a hook refused it) does not take the others with it.
      for (const item of batch) {
        try {
          const receipt = store.append(item.draft, hooks);
          item.resolve(receipt);
          lastIndex = receipt.index;
        } catch (error) {
          item.reject(error);
        }
      }
    }
    if (lastIndex + 1 - checkpointedSize < everyReceipts) return;
    try {
      checkpoint();
    } catch (error) {
      // The receipts are written; the next checkpoint (N receipts or T seconds on) covers them.
      warn(`receipt checkpoint failed: ${(error as Error).message}`);
    }
  }

  return {
    store,
    origin,
    verifierKey: publicVerifierKey,
    argumentsDigest: (argumentsValue) => keyedDigest(digestKey, argumentsValue ?? {}),
    record(fields, options) {
      // The store copies the receipt's own fields out of this (argumentsValue and resultValue stay behind).
      const draft: ReceiptDraft = {
        ...fields,
        argumentsDigest: fields.argumentsDigest ?? keyedDigest(digestKey, fields.argumentsValue ?? {}),
        resultDigest: fields.resultValue === undefined ? null : keyedDigest(digestKey, fields.resultValue),
      };
      if (storesArguments) draft.arguments = fields.argumentsValue ?? {};
      return new Promise<Receipt>((resolve, reject) => {
        queue.push({ draft, resolve, reject });
        if (options?.othersInFlight) {
          if (!isTurnFlushScheduled) {
            isTurnFlushScheduled = true;
            setImmediate(() => {
              isTurnFlushScheduled = false;
              flush();
            });
          }
        } else if (!isSoonFlushScheduled) {
          // Commits whatever is queued, the receipts waiting for the end of the turn included.
          isSoonFlushScheduled = true;
          queueMicrotask(() => {
            isSoonFlushScheduled = false;
            flush();
          });
        }
      });
    },
    addHook(hook) {
      hooks.push(hook);
    },
    checkpoint,
    close() {
      flush();
      clearInterval(timer);
      try {
        checkpoint();
      } catch (error) {
        warn(`final receipt checkpoint failed: ${(error as Error).message}`);
      }
    },
  };
}
