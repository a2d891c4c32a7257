/**
 * What the admin API is built from (gateway.ts gives it): the vault holding its token, the registry, and the
 * areas whose state it shows (drift, receipts, webhooks, sessions), each absent when that area is off.
 */
import type { DriftSourceReport, LoadedConfig, Lockfile, LockReloadStatus } from '@gateway/core';
import type { Vault } from '@gateway/runtime';
import type { Throttles } from '../authorization/stores/ports.js';
import type { PersonLogins } from '../credentials/person/index.js';
import type { SessionStore } from '../authorization/stores/session-store.js';
import type { OriginGuard } from '../mcp/origin.js';
import type { ReceiptLog } from '../receipts/log.js';
import type { Webhooks } from '../webhooks/service.js';

/** The part of the publication registry the admin API reads (publications/registry.ts). */
export interface AdminRegistry {
  readonly isReady: boolean;
  snapshot(): {
    readonly tools: ReadonlyMap<string, { sourceName: string; entry: { fingerprint: string } }>;
    readonly publications: ReadonlyMap<string, string>;
    /** The verified lock served (what the in-use publications do not offer is read from it). */
    readonly lock?: Lockfile | null;
  };
  blockedReason(sourceName: string, toolName: string): string | undefined;
}

export interface AdminPluginOptions {
  vault: Vault;
  loaded: LoadedConfig;
  registry: AdminRegistry;
  /**
   * The same Host/Origin check as /mcp (mcp/origin.ts): a page whose name was rebound to this gateway's
   * address must not reach the admin API either, even though it would still need the token.
   */
  guard: OriginGuard;
  /** The drift watcher; absent when drift checks are disabled. */
  drift?: { report(): DriftSourceReport[]; checkNow?(sources?: readonly string[]): Promise<void> };
  /** The receipt log (`/admin/receipts…`); absent when receipts are disabled. */
  receipts?: ReceiptLog;
  /** Webhook delivery (`/admin/webhooks…`); absent when no endpoint is configured. */
  webhooks?: Webhooks;
  /** The last reload of tools.lock that did not leave the served lock as it was (a swap or a refusal). */
  lastLockReload?: () => LockReloadStatus | undefined;
  /**
   * The authorization area's session store (the same instance, so a revocation here also clears the /mcp
   * authorizer's cache at once); absent when the gateway runs without its authorization server.
   */
  sessions?: SessionStore;
  /** Where wrong admin tokens are counted (default: this process's memory; the database with workers). */
  throttles?: Throttles;
  /** Serves `GET /metrics` behind the admin token: the Prometheus exposition text (telemetry/). */
  metrics?: () => Promise<{ contentType: string; text: string }>;
  /** Per-person logins (`/admin/logins…`); absent when none is configured (the list is then empty). */
  personLogins?: Pick<PersonLogins, 'list' | 'unlink' | 'settings'>;
  /** Refused `/mcp` requests by reason, counted by this process's authorizer (`AdminStatus.mcpRefusals`). */
  mcpRefusals?: () => Record<string, number>;
}
