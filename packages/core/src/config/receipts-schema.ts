/** The `receipts` section of gateway.yaml (docs/receipts.md, docs/config.md). */

/** Checkpoint cadence defaults: a signed checkpoint every 1,000 receipts or every 10 seconds with new receipts. */
export const DEFAULT_CHECKPOINT_EVERY_RECEIPTS = 1000;
export const DEFAULT_CHECKPOINT_EVERY_SECONDS = 10;

export interface ReceiptsConfig {
  /** Record a receipt for every governed call (default true; false only for measurements). */
  enabled?: boolean;
  /** Store the call arguments in receipts (default false: only their keyed digest). */
  storeArguments?: boolean;
  /**
   * Answer once the receipt is in the process's journal (default true), or false: once its database
   * transaction (with its outbox rows) has committed.
   */
  journal?: boolean;
  /** The checkpoint origin line (default `<host of gateway.url>/receipts`). */
  origin?: string;
  /**
   * Checkpoint verifier keys `receipts verify` and the anchor check accept besides the vault's signing key
   * (earlier keys after a rotation): never a key read from the database.
   */
  trustedKeys?: string[];
  checkpoint?: { everyReceipts?: number; everySeconds?: number };
}

export const receiptsSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'The receipt log: one receipt per governed call, in a signed Merkle tree (docs/receipts.md)',
  properties: {
    enabled: { type: 'boolean', default: true, description: 'false records no receipts (measurements only: there is then no audit trail)' },
    storeArguments: { type: 'boolean', default: false, description: 'store the call arguments in receipts, not just their keyed digest' },
    journal: {
      type: 'boolean',
      default: true,
      description: "answer once the receipt is in the process's journal (true), or once its database transaction has committed (false)",
    },
    origin: {
      type: 'string',
      minLength: 1,
      pattern: '^[^\\s+]+$',
      description: 'checkpoint origin line; default <host of gateway.url>/receipts',
    },
    trustedKeys: {
      type: 'array',
      uniqueItems: true,
      description:
        'checkpoint verifier keys (<name>+<key ID>+<base64 key>) trusted besides the vault signing key, e.g. earlier signing keys',
      items: { type: 'string', pattern: '^[^+\\s]+\\+[0-9a-f]{8}\\+[A-Za-z0-9+/=]+$' },
    },
    checkpoint: {
      type: 'object',
      additionalProperties: false,
      properties: {
        everyReceipts: { type: 'integer', minimum: 1, default: DEFAULT_CHECKPOINT_EVERY_RECEIPTS },
        everySeconds: { type: 'number', exclusiveMinimum: 0, default: DEFAULT_CHECKPOINT_EVERY_SECONDS },
      },
    },
  },
} as const;
