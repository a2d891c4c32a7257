import type { Command } from 'commander';
import type { AdminLinkedAccount, AdminLinkedAccountList, AdminUnlinkAnswer } from '@gateway/core';
import { adminClient, withAdminOptions, type AdminClientOptions } from '../admin-client.js';
import { contextFrom, printResult } from '../context.js';

/**
 * The accounts people linked for per-person logins (`type: oauthPerson`), through the running gateway's admin
 * API: metadata only (the tokens stay in the vault). Unlinking removes the link and the tokens; the person's next
 * call asks them to link again.
 */
const ADMIN_HELP =
  '\nTalks to the running gateway (--url, default gateway.url). The admin token comes from GATEWAY_ADMIN_TOKEN,\n' +
  'else from the vault (admin.tokenSecret, default admin-token).\n';

function describeLink(account: AdminLinkedAccount): string {
  return (
    `${account.person}  ${account.login}  sub ${account.subject ?? '?'}  scopes ${account.scopes.join(' ') || '(none)'}  ` +
    `linked ${account.linkedAt}  token until ${account.expiresAt}`
  );
}

export function registerLogins(program: Command): void {
  const logins = program
    .command('logins')
    .description("per-person logins: the accounts people linked at their providers (gateway.yaml's oauthPerson)")
    .addHelpText(
      'after',
      '\nExamples:\n  gateway logins list\n  gateway logins list --person local:alice\n  gateway logins unlink local:alice orders/oauth',
    );

  withAdminOptions(logins.command('list').description('list linked accounts, by person then login'))
    .option('--person <subject>', "only this person's links (local:<name> or oidc:<issuer>#<sub>)")
    .addHelpText('after', '\nExamples:\n  gateway logins list\n  gateway logins list --person local:alice --json')
    .addHelpText('after', ADMIN_HELP)
    .action(async (options: AdminClientOptions & { person?: string }, command: Command) => {
      const context = contextFrom(command);
      const path = options.person ? `logins?person=${encodeURIComponent(options.person)}` : 'logins';
      const list = (await (await adminClient(context, options)).request<AdminLinkedAccountList>('GET', path)).logins;
      printResult(context, list.length === 0 ? 'no linked accounts' : list.map(describeLink), { logins: list });
    });

  withAdminOptions(
    logins.command('unlink <person> <login>').description("remove a person's link and tokens; their next call asks them to link again"),
  )
    .addHelpText('after', '\nExamples:\n  gateway logins unlink local:alice orders/oauth')
    .addHelpText('after', ADMIN_HELP)
    .action(async (person: string, login: string, options: AdminClientOptions, command: Command) => {
      const context = contextFrom(command);
      const admin = await adminClient(context, options);
      const { unlinked } = await admin.request<AdminUnlinkAnswer>('POST', 'logins/unlink', { person, login });
      printResult(context, `unlinked ${unlinked.login} of ${unlinked.person}`, { unlinked });
    });
}
