/**
 * The admin API's wire contract (`/admin/*` on a running gateway, docs/cli.md): the server answers with these
 * shapes and the CLI reads them, so neither package imports the other. Plain JSON data only.
 */

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
