import type { SessionRecord, SessionState } from './ports.js';

export type { NewSession, SessionRecord, SessionState, SessionTool, Sessions } from './ports.js';

/** The number n of `session-<n>` (codes and refresh tokens refer to their session by it); undefined for another id. */
export function sessionNumber(sessionId: string): number | undefined {
  const match = /^session-([1-9]\d{0,15})$/.exec(sessionId);
  return match ? Number(match[1]) : undefined;
}

export function sessionId(number: number): string {
  return `session-${number}`;
}

export function sessionState(session: Pick<SessionRecord, 'expiresAt' | 'revokedAt'>, now = Date.now()): SessionState {
  if (session.revokedAt !== null) return 'revoked';
  return session.expiresAt <= now ? 'expired' : 'open';
}
