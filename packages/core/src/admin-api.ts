/**
 * The admin API's wire contract (`/admin/*` on a running gateway, docs/cli.md): the server answers with these
 * shapes and the CLI reads them, so neither package imports the other. Plain JSON data only.
 */

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
  proposal?: { digest: string; detectedAt: string; changed: string[]; removed: string[]; added: string[] };
}

/** `GET /admin/status`. */
export interface AdminStatus {
  ready: boolean;
  publications: Array<{ source: string; id: string; toolCount: number; blockedCount: number }>;
  drift: DriftSourceReport[];
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
  /** The tools with the fingerprints the person approved. */
  tools: Array<{ name: string; fingerprint: string }>;
  logins: string[];
  createdAt: string;
  expiresAt: string;
  revokedAt?: string;
  revokedReason?: string | null;
}

/** `GET /admin/sessions` (every session, open or ended, oldest first). */
export interface AdminSessionList {
  sessions: AdminSession[];
}

/** `GET /admin/sessions/:id` and `POST /admin/sessions/:id/revoke` (body `{ "reason": "…" }`). */
export interface AdminSessionAnswer {
  session: AdminSession;
}
