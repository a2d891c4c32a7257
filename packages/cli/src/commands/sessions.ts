import type { Command } from 'commander';
import type { AdminSession, AdminSessionAnswer, AdminSessionList } from '@gateway/core';
import { adminClient, withAdminOptions, type AdminClientOptions } from '../admin-client.js';
import { contextFrom, printResult } from '../context.js';

/**
 * Sessions live in the running gateway: these commands read and revoke them through its admin API, so a
 * revocation also clears the server's cache of verified tokens at once, and the CLI never opens the server's
 * database.
 */
const ADMIN_HELP =
  '\nTalks to the running gateway (--url, default gateway.url). The admin token comes from GATEWAY_ADMIN_TOKEN,\n' +
  'else from the vault (admin.tokenSecret, default admin-token).\n';

export function registerSessions(program: Command): void {
  const sessions = program
    .command('sessions')
    .description('approved sessions: who allowed which client which tools, until when')
    .addHelpText('after', '\nExamples:\n  gateway sessions list\n  gateway sessions show session-3\n  gateway sessions revoke session-3');

  withAdminOptions(sessions.command('list').description('list sessions (open ones only unless --all)'))
    .addHelpText('after', '\nExamples:\n  gateway sessions list\n  gateway sessions list --all --json')
    .option('--all', 'include expired and revoked sessions')
    .addHelpText('after', ADMIN_HELP)
    .action(async (options: AdminClientOptions & { all?: boolean }, command: Command) => {
      const context = contextFrom(command);
      const list = (await (await adminClient(context, options)).request<AdminSessionList>('GET', 'sessions')).sessions;
      const shown = options.all ? list : list.filter((session) => session.state === 'open');
      printResult(
        context,
        shown.length === 0
          ? options.all
            ? 'no sessions'
            : 'no open sessions (--all shows ended ones)'
          : shown.map(
              (session) =>
                `${session.id}  ${session.state.padEnd(7)}  ${session.person} → ${session.client}  ${session.tools.length} tool(s)  ` +
                `until ${session.expiresAt}`,
            ),
        { sessions: shown },
      );
    });

  withAdminOptions(
    sessions
      .command('show <id>')
      .description('one session in full: tools with the fingerprints approved (stale ones marked), logins, times'),
  )
    .addHelpText('after', '\nExamples:\n  gateway sessions show session-3')
    .addHelpText('after', ADMIN_HELP)
    .action(async (id: string, options: AdminClientOptions, command: Command) => {
      const context = contextFrom(command);
      const admin = await adminClient(context, options);
      const { session } = await admin.request<AdminSessionAnswer>('GET', `sessions/${encodeURIComponent(id)}`);
      printResult(context, describeSession(session), { session });
    });

  withAdminOptions(sessions.command('revoke <id>').description('end a session now: its tokens stop working on the next request'))
    .addHelpText('after', '\nExamples:\n  gateway sessions revoke session-3')
    .option('--reason <text>', 'recorded with the revocation', 'revoked by an administrator')
    .addHelpText('after', ADMIN_HELP)
    .action(async (id: string, options: AdminClientOptions & { reason: string }, command: Command) => {
      const context = contextFrom(command);
      const admin = await adminClient(context, options);
      const { session } = await admin.request<AdminSessionAnswer>('POST', `sessions/${encodeURIComponent(id)}/revoke`, {
        reason: options.reason,
      });
      printResult(context, `revoked ${session.id} (${session.person} → ${session.client})`, { session });
    });
}

function describeSession(session: AdminSession): string[] {
  return [
    `${session.id} (${session.state})`,
    `  person   ${session.person} (${session.subject})`,
    `  client   ${session.client} (${session.clientId})`,
    `  created  ${session.createdAt}`,
    `  expires  ${session.expiresAt}`,
    ...(session.revokedAt ? [`  revoked  ${session.revokedAt}: ${session.revokedReason ?? ''}`] : []),
    ...(session.reapprovalRequestedAt
      ? [`  re-approval asked of the client ${session.reapprovalRequestedAt} for ${session.reapprovalTools?.join(', ') ?? ''}`]
      : []),
    '  tools',
    ...session.tools.map((tool) => `    ${tool.name}  ${tool.fingerprint}${tool.stale ? `  STALE: ${tool.staleReason ?? ''}` : ''}`),
    `  logins   ${session.logins.join(', ') || '(none)'}`,
  ];
}
