import type { Command } from 'commander';
import type { AdminDriftCheck } from '@gateway/core';
import { adminClient, type AdminClientOptions } from '../admin-client.js';
import { contextFrom, printResult } from '../context.js';
import { describeDrift } from './status.js';

export function registerDrift(program: Command): void {
  const drift = program
    .command('drift')
    .description("a running gateway's drift watcher: re-read descriptions now instead of at the next interval")
    .addHelpText('after', '\nExamples:\n  gateway drift check\n  gateway drift check orders --url https://gateway.example.com');

  drift
    .command('check [source]')
    .description('re-read the live description of one source (or all) now; changed operations stop being callable at once')
    .option('--url <url>', 'the gateway base URL (default: gateway.url from the config)')
    .option('--timeout <ms>', 'how long to wait for the check', '30000')
    .addHelpText(
      'after',
      '\nThe push trigger for your deployment pipeline: run it right after deploying a new version of an API, so\n' +
        'the gateway blocks changed operations now rather than at the next drift.intervalSeconds. Calls the\n' +
        'admin API (POST /admin/drift/check); the admin token comes from GATEWAY_ADMIN_TOKEN or the vault.\n' +
        'Exits 0 when the check ran (drift found or not; read the output or --json), 9 without a valid token.\n' +
        '\nExamples:\n' +
        '  gateway drift check\n' +
        '  gateway drift check orders --json',
    )
    .action(async (source: string | undefined, options: AdminClientOptions, command: Command) => {
      const context = contextFrom(command);
      const admin = await adminClient(context, options);
      const answer = await admin.request<AdminDriftCheck>('POST', 'drift/check', source === undefined ? {} : { source });
      printResult(context, describeDrift(answer.drift), answer);
    });
}
