/**
 * The admin API's wire contract (`/admin/*` on a running gateway, docs/cli.md): the server answers with these
 * shapes and the CLI reads them, so neither package imports the other. Plain JSON data only.
 */
import type { Receipt } from './receipt.js';

import type { NotOfferedEntry } from './model.js';

/** How a source's live description compares with the publication in use (docs/drift.md). */
export type DriftStatus = 'pending' | 'in-sync' | 'drifted' | 'not-published' | 'error';

/** One source as the drift watcher last saw it. */
export interface DriftSourceReport {
  source: string;
  document: string;
  checkedAt: string | null;
  status: DriftStatus;
  error?: { code: string; message: string };
  publication: string | null;
  blockedTools: Array<{ tool: string; reason: string }>;
  /**
   * The proposed publication the live description makes (docs/drift.md): `id` is the number `gateway import` gives it
   * in tools.lock, `summary` says in words what changed versus the publication in use.
   */
  proposal?: {
    id?: string;
    digest: string;
    detectedAt: string;
    changed: string[];
    removed: string[];
    added: string[];
    summary?: string[];
    /** Tools the proposal would select (carried forward from the publication in use). */
    toolCount?: number;
  };
}

/** What `gateway status` shows of hot reloads: a refused lock keeps the last good one serving, and says why. */
export interface LockReloadStatus {
  status: 'swapped' | 'refused' | 'missing';
  at: string;
  code?: string;
  message?: string;
}

/**
 * A webhook endpoint's delivery state (`GET /admin/status` and `GET /admin/webhooks`): `paused` when an
 * event's attempts ran out (later events wait until `gateway webhooks resume`), `disabled` after 410 Gone.
 */
export interface AdminWebhookState {
  name: string;
  state: 'active' | 'paused' | 'disabled';
  /** Where delivery stopped, and why (the event's last error). */
  paused: { at: string; sequence: number | null; reason: string | null } | null;
  disabled: { at: string; reason: string | null } | null;
  /** Events not delivered yet (including the one a pause stopped at). */
  pending: number;
}

/** `GET /admin/status`. */
export interface AdminStatus {
  ready: boolean;
  publications: Array<{
    source: string;
    id: string;
    toolCount: number;
    blockedCount: number;
    /** The operations of its description it does not offer, with why (absent for publications signed before this was recorded). */
    notOffered?: NotOfferedEntry[];
  }>;
  drift: DriftSourceReport[];
  /** The last hot reload of tools.lock that changed something or was refused; absent before the first. */
  lockReload?: LockReloadStatus;
  /**
   * `/mcp` requests refused before MCP since this process started, by reason (`no_token`, `malformed_header`,
   * `invalid_token`, `token_expired`, `session_revoked`, `session_expired`; docs/authorization.md › Refused
   * requests). Absent when the gateway runs without its authorization server.
   */
  mcpRefusals?: Record<string, number>;
  /** Each webhook endpoint's delivery state; absent when none is configured. */
  webhooks?: AdminWebhookState[];
}

export type AdminSessionState = 'open' | 'expired' | 'revoked';

/** One approved session as `GET /admin/sessions` lists it (times as ISO 8601). */
export interface AdminSession {
  id: string;
  state: AdminSessionState;
  person: string;
  subject: string;
  client: string;
  clientId: string;
  /**
   * The tools with the fingerprints the person approved; `stale` when the in-use publication no longer offers
   * that fingerprint (changed: `currentFingerprint` says what it is now; or no longer published).
   */
  tools: Array<{ name: string; fingerprint: string; stale?: true; staleReason?: string; currentFingerprint?: string }>;
  logins: string[];
  createdAt: string;
  expiresAt: string;
  revokedAt?: string;
  revokedReason?: string | null;
  /** When the gateway last challenged the client to have changed tools approved again, and which. */
  reapprovalRequestedAt?: string;
  reapprovalTools?: string[];
}

/** `GET /admin/sessions` (every session, open or ended, oldest first). */
export interface AdminSessionList {
  sessions: AdminSession[];
}

/** `GET /admin/sessions/:id` and `POST /admin/sessions/:id/revoke` (body `{ "reason": "…" }`). */
export interface AdminSessionAnswer {
  session: AdminSession;
}

/** One person's linked account of a per-person login (`oauthPerson`): metadata only, never a token (times ISO 8601). */
export interface AdminLinkedAccount {
  /** The gateway's person (`local:<name>`, `oidc:<issuer>#<sub>`). */
  person: string;
  /** `<source>/<scheme>`. */
  login: string;
  /** The person's `sub` at the provider; null when the provider did not tell it. */
  subject: string | null;
  scopes: string[];
  linkedAt: string;
  /** When the current access token expires (it is refreshed shortly before). */
  expiresAt: string;
}

/** `GET /admin/logins` (`?person=<subject>` for one person's): ordered by person, then login. */
export interface AdminLinkedAccountList {
  logins: AdminLinkedAccount[];
}

/** `POST /admin/logins/unlink` (body `{ "person": "…", "login": "…" }`): the link removed, with its tokens. */
export interface AdminUnlinkAnswer {
  unlinked: AdminLinkedAccount;
}

/** `POST /admin/drift/check` (body `{ "source": "…" }` or `{}`): the report after checking now. */
export interface AdminDriftCheck {
  drift: DriftSourceReport[];
}

/** `GET /admin/receipts` (filters as query parameters, docs/receipts.md): a page, oldest first. */
export interface AdminReceiptList {
  receipts: Receipt[];
  /** The last id of a full page: pass it as `after` for the next one. */
  next?: string;
}

/** `GET /admin/receipts/<id>/proof`: everything a verifier needs next to the public key. */
export interface AdminReceiptProof {
  receipt: Receipt;
  /** base64 of SHA-256(0x00 || canonical receipt). */
  leafHash: string;
  checkpoint: { treeSize: number; note: string; verifierKey: string };
  /** base64 of each hash of the RFC 9162 §2.1.3 inclusion path, leaf level first. */
  inclusionPath: string[];
}

/** Where an event of a webhook endpoint's ordered stream is (docs/webhooks.md). */
export type AdminWebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One endpoint of `GET /admin/webhooks`: its delivery state and its settings. */
export interface AdminWebhookEndpoint extends AdminWebhookState {
  url: string;
  outcomes: string[];
  types: string[];
  data: 'standard' | 'detailed';
  onExhausted: 'pause' | 'skip';
  rotating: boolean;
  nextSequence: number;
  counts: Record<AdminWebhookDeliveryStatus, number>;
  lease: { holder: string; expiresAt: string } | null;
}

/** `GET /admin/webhooks`. */
export interface AdminWebhookEndpointList {
  endpoints: AdminWebhookEndpoint[];
}

/** One event of `GET /admin/webhooks/:endpoint/deliveries` (its body is left out: it holds the receipt). */
export interface AdminWebhookDelivery {
  sequence: number;
  eventId: string;
  receiptId: string | null;
  status: AdminWebhookDeliveryStatus;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

/** `GET /admin/webhooks/:endpoint/deliveries`. */
export interface AdminWebhookDeliveryList {
  endpoint: string;
  deliveries: AdminWebhookDelivery[];
}

/** `POST /admin/webhooks/:endpoint/replay` (body `{ "failed": true }` or `{ "from": <sequence> }`). */
export interface AdminWebhookReplay {
  endpoint: string;
  replayed: number;
}

/** `POST /admin/webhooks/:endpoint/resume`: where delivery goes on from, and what the endpoint was. */
export interface AdminWebhookResume {
  endpoint: string;
  pausedSequence: number | null;
  wasPaused: boolean;
  wasDisabled: boolean;
}

/** `POST /admin/webhooks/:endpoint/test`: the signed test event sent now, and what the receiver answered. */
export interface AdminWebhookTest {
  endpoint: string;
  eventId: string;
  status: number | null;
  error: string | null;
  acknowledged: boolean;
}
