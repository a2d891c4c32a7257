/**
 * Every PostgreSQL advisory lock the gateway takes, in one place so no two purposes share a key. The two-key form
 * (`pg_advisory_lock(class, object)`) is used throughout: the class is the purpose below (a 'GW' prefix keeps it
 * apart from other programs sharing the database), the object what is locked within it (0 when one lock).
 */
export const ADVISORY_LOCK_CLASS = {
  /** Applying schema migrations: replicas starting together migrate one at a time (./migrate.ts). */
  migrations: 0x4757_0001,
  /** Registering a client from one address: the per-address count and the insert are one step (hashtext(address)). */
  clientRegistrations: 0x4757_0002,
  /** Asking for a one-call approval: find-or-create per call binding (hashtext of session, tool, fingerprint, digest). */
  approvalRequests: 0x4757_0003,
  /** A throttle update: one lock per key it names (hashtext of `throttle:<kind>` and the key's digest). */
  throttles: 0x4757_0004,
} as const;
