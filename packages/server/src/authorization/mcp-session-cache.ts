/**
 * What the /mcp authorizer keeps of sessions between requests. Sessions are parsed once into callers and cached;
 * where one stands is read from the session store once per turn of the event loop (a primary-key lookup), so
 * `gateway sessions revoke` from another process takes effect on the next request, and a revocation in this process
 * at once. The synchronous call-time re-check answers from the state read this turn or, failing that, the last one
 * read, and reads it again in the background: a session found ended then tells its listeners (its notification
 * streams end). With a change feed (store/changes.ts), a revocation in this process is announced (`session-ended`),
 * and a session revoked in another process or replica is read again as soon as its announcement arrives (within a
 * second), so this process ends its streams and answers the synchronous re-check from the new state without
 * waiting for the session's next request.
 */
import type { McpCaller } from '../calls/caller.js';
import type { ChangeFeed } from '../store/changes.js';
import type { SessionRecord, SessionState, Sessions } from './stores/ports.js';

/** Entries kept before a cache starts over (a bound on memory, not on correctness: everything is read again). */
const MAX_CACHED_SESSIONS = 10_000;

export interface McpSessionCache {
  /** Where the session stands, read at most once per event-loop turn; undefined: a session the store does not know. */
  stateOf(sessionId: string): Promise<SessionState | undefined>;
  /** The state read this turn or the last one read (for the synchronous re-check); undefined when never read. */
  lastState(sessionId: string): SessionState | undefined;
  /** Whether this turn has read the session's state already. */
  hasStateThisTurn(sessionId: string): boolean;
  /** The cached caller of an open session, without any await. */
  cachedCaller(sessionId: string): McpCaller | undefined;
  /** The caller of a session, from the cache or the store. */
  callerFor(sessionId: string): Promise<McpCaller | undefined>;
  forget(sessionId: string): void;
  onSessionEnded(listener: (sessionId: string) => void): () => void;
}

/** The caller a session's token stands for: its person, client, approved tools (name → fingerprint) and logins. */
export function callerOf(session: SessionRecord): McpCaller {
  return {
    sessionId: session.id,
    subject: session.subject,
    clientId: session.clientId,
    tools: new Map(session.tools.map((tool) => [tool.name, tool.fingerprint])),
    logins: new Set(session.logins),
    expiresAt: session.expiresAt,
  };
}

export function createMcpSessionCache(
  sessions: Sessions,
  changes?: ChangeFeed,
  onAnnounceError?: (sessionId: string, error: unknown) => void,
): McpSessionCache {
  const callers = new Map<string, McpCaller>();
  // Where a session stands, as read in the current turn of the event loop: the token check and the call
  // decision of one request read it once, not twice (about 2 % of a call's CPU). Cleared at the end of the
  // turn, and at once for a session revoked in this process.
  let statesThisTurn: Map<string, Promise<SessionState | undefined>> | undefined;
  // The last state read of each session (for the synchronous call-time re-check); undefined: not in the store.
  const lastStates = new Map<string, SessionState | undefined>();
  const endedListeners = new Set<(sessionId: string) => void>();
  const ended = (sessionId: string): void => {
    for (const listener of endedListeners) listener(sessionId);
  };
  sessions.onRevoke((sessionId) => {
    callers.delete(sessionId);
    statesThisTurn?.delete(sessionId);
    lastStates.set(sessionId, 'revoked');
    ended(sessionId);
    // Ids only: the other processes read the session's state themselves.
    changes?.publish('session-ended', { sessionId }).catch((error: unknown) => onAnnounceError?.(sessionId, error));
  });

  function stateOf(sessionId: string): Promise<SessionState | undefined> {
    if (!statesThisTurn) {
      statesThisTurn = new Map();
      setImmediate(() => {
        statesThisTurn = undefined;
      });
    }
    const known = statesThisTurn.get(sessionId);
    if (known) return known;
    const read = sessions.state(sessionId).then((state) => {
      const before = lastStates.get(sessionId);
      if (lastStates.size > MAX_CACHED_SESSIONS) lastStates.clear();
      lastStates.set(sessionId, state);
      if (state !== 'open') {
        callers.delete(sessionId);
        // Ended behind this process's back (another process, the CLI): its streams end too.
        if (before === 'open') ended(sessionId);
      }
      return state;
    });
    statesThisTurn.set(sessionId, read);
    return read;
  }

  // Only sessions this process has read are read again: a change costs nothing where the session is not used.
  changes?.subscribe('session-ended', ({ sessionId }) => {
    callers.delete(sessionId);
    statesThisTurn?.delete(sessionId);
    if (lastStates.has(sessionId)) stateOf(sessionId).catch(() => undefined);
  });

  return {
    stateOf,
    lastState: (sessionId) => lastStates.get(sessionId),
    hasStateThisTurn: (sessionId) => statesThisTurn?.has(sessionId) === true,
    cachedCaller: (sessionId) => callers.get(sessionId),
    async callerFor(sessionId) {
      const cached = callers.get(sessionId);
      if (cached) return cached;
      const session = await sessions.find(sessionId);
      if (!session) return undefined;
      const caller = callerOf(session);
      if (callers.size > MAX_CACHED_SESSIONS) callers.clear();
      callers.set(sessionId, caller);
      return caller;
    },
    forget(sessionId) {
      callers.delete(sessionId);
    },
    onSessionEnded(listener) {
      endedListeners.add(listener);
      return () => endedListeners.delete(listener);
    },
  };
}
