/**
 * Where the gateway keeps its state, as the composition sees it: one factory per area's ports. The areas receive
 * ports, never a connection; which engine is behind them is the storage's business (SQLite: ./sqlite/storage.ts;
 * PostgreSQL: ./postgres/storage.ts, several replicas on one database, docs/deployment.md).
 */
import type { Approvals } from '../approvals/ports.js';
import type { AuthorizationPorts } from '../authorization/stores/ports.js';
import type { LinkedAccounts } from '../credentials/person/ports.js';
import type { DriftStore } from '../drift/ports.js';
import type { OutboxStore } from '../outbox/ports.js';
import type { ReceiptStorage } from '../receipts/store.js';
import type { ChangeFeed } from '../store/changes.js';
import type { EphemeralState } from '../store/ephemeral-state.js';
import type { Leases } from '../store/leases.js';

export interface GatewayStorage {
  readonly kind: 'sqlite' | 'postgres';
  /**
   * The ephemeral state of this process's areas (sign-in and consent pages, retries' spent `requestState`s, per-person
   * logins' connect tickets and linking attempts): built once by the composition and given to each area.
   * `sharedByWorkers`: several processes serve together, so it is the database's (PostgreSQL: always).
   */
  ephemeralState(options: { sharedByWorkers: boolean }): EphemeralState;
  /**
   * `sharedByWorkers`: several processes serve together, so the throttles' counts are the database's too;
   * `ephemeral`: the process's ephemeral state (`ephemeralState`), which the area's ports hold.
   */
  authorizationStores(options: { sharedByWorkers: boolean; ephemeral: EphemeralState }): AuthorizationPorts;
  /** The receipt store and the unit of work its appends (and the outbox's rows) commit in. */
  receiptStorage(): ReceiptStorage;
  outboxStore(): OutboxStore;
  driftStore(): DriftStore;
  leases(): Leases;
  approvals(): Approvals;
  linkedAccounts(): LinkedAccounts;
  /** The change feed every process on this storage shares (one per process: the same feed on each call). */
  changeFeed(): ChangeFeed;
}
