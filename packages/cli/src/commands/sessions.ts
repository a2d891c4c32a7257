import type { Command } from 'commander';
import { GatewayError, loadConfig, readLockFile } from '@gateway/core';
import { markStaleTools, openSessionStore, publishedFingerprints, sessionState, type SessionRecord, type SessionStore, type SessionToolStatus } from '@gateway/server';
import { contextFrom, printResult } from '../context.js';

/**
 * Sessions are read from and revoked in the gateway's SQLite database directly (WAL lets the running
 * server and this command share it); the server checks the session row on every /mcp request, so a
 * revocation here takes effect on the next call without an admin API round trip.
 */
async function withStore<T>(configPath: string, use: (store: SessionStore) => T): Promise<T> {
  const opened = openSessionStore(await loadConfig(configPath));
  try {
    return use(opened.store);
  } finally {
    opened.close();
  }
}

/**
 * The tools of a session marked against the lock's in-use publications: a tool whose operation changed
 * since approval (or is no longer published) is `stale`, and its client is asked to have it approved again
 * (docs/authorization.md › Re-approval). Without a lock nothing can be compared and nothing is marked.
 */
async function toolsWithStaleness(lockPath: string, session: SessionRecord): Promise<SessionToolStatus[]> {
  const lock = await readLockFile(lockPath, { missingIsEmpty: true });
  if (lock.sources.length === 0) return session.tools;
  return markStaleTools(session.tools, publishedFingerprints(lock));
}

function view(session: SessionRecord, now = Date.now()) {
  return {
    id: session.id,
    state: sessionState(session, now),
    person: session.personName,
    subject: session.subject,
    client: session.clientName,
    clientId: session.clientId,
    tools: session.tools,
    logins: session.logins,
    createdAt: new Date(session.createdAt).toISOString(),
    expiresAt: new Date(session.expiresAt).toISOString(),
    ...(session.revokedAt !== null ? { revokedAt: new Date(session.revokedAt).toISOString(), revokedReason: session.revokedReason } : {}),
    ...(session.reapprovalRequestedAt !== null ? { reapprovalRequestedAt: new Date(session.reapprovalRequestedAt).toISOString(), reapprovalTools: session.reapprovalTools } : {}),
  };
}

export function registerSessions(program: Command): void {
  const sessions = program.command('sessions').description('approved sessions: who allowed which client which tools, until when')
    .addHelpText('after', '\nExamples:\n  gateway sessions list\n  gateway sessions show session-3\n  gateway sessions revoke session-3');

  sessions
    .command('list')
    .description('list sessions (open ones only unless --all)')
    .addHelpText('after', '\nExamples:\n  gateway sessions list\n  gateway sessions list --all --json')
    .option('--all', 'include expired and revoked sessions')
    .action(async (options: { all?: boolean }, command: Command) => {
      const context = contextFrom(command);
      const list = (await withStore(context.configPath, (store) => store.listSessions())).map((session) => view(session));
      const shown = options.all ? list : list.filter((session) => session.state === 'open');
      printResult(
        context,
        shown.length === 0
          ? options.all ? 'no sessions' : 'no open sessions (--all shows ended ones)'
          : shown.map((session) => `${session.id}  ${session.state.padEnd(7)}  ${session.person} → ${session.client}  ${session.tools.length} tool(s)  until ${session.expiresAt}`),
        { sessions: shown },
      );
    });

  sessions
    .command('show <id>')
    .description('one session in full: tools with the fingerprints approved (stale ones marked), logins, times')
    .addHelpText('after', '\nExamples:\n  gateway sessions show session-3')
    .action(async (id: string, _options: unknown, command: Command) => {
      const context = contextFrom(command);
      const session = await withStore(context.configPath, (store) => store.session(id));
      if (!session) throw new GatewayError('SESSION_NOT_FOUND', `no session named '${id}'; \`gateway sessions list --all\` shows them`, { category: 'usage' });
      const shown = { ...view(session), tools: await toolsWithStaleness(context.lockPath, session) };
      printResult(
        context,
        [
          `${shown.id} (${shown.state})`,
          `  person   ${shown.person} (${shown.subject})`,
          `  client   ${shown.client} (${shown.clientId})`,
          `  created  ${shown.createdAt}`,
          `  expires  ${shown.expiresAt}`,
          ...(shown.revokedAt ? [`  revoked  ${shown.revokedAt}: ${shown.revokedReason ?? ''}`] : []),
          ...(shown.reapprovalRequestedAt ? [`  re-approval asked of the client ${shown.reapprovalRequestedAt} for ${shown.reapprovalTools?.join(', ')}`] : []),
          '  tools',
          ...shown.tools.map((tool) => `    ${tool.name}  ${tool.fingerprint}${tool.stale ? `  STALE: ${tool.staleReason}` : ''}`),
          `  logins   ${shown.logins.join(', ') || '(none)'}`,
        ],
        { session: shown },
      );
    });

  sessions
    .command('revoke <id>')
    .description('end a session now: its tokens stop working on the next request')
    .addHelpText('after', '\nExamples:\n  gateway sessions revoke session-3')
    .option('--reason <text>', 'recorded with the revocation', 'revoked by an administrator')
    .action(async (id: string, options: { reason: string }, command: Command) => {
      const context = contextFrom(command);
      const session = await withStore(context.configPath, (store) => store.revokeSession(id, options.reason));
      printResult(context, `revoked ${session.id} (${session.personName} → ${session.clientName})`, { session: view(session) });
    });
}
