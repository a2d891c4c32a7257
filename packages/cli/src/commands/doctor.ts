import type { Command } from 'commander';
import { loadConfig } from '@gateway/core';
import { diagnose, type DoctorFinding } from '@gateway/runtime';
import { contextFrom, printResult } from '../context.js';

const MARK: Record<DoctorFinding['level'], string> = { ok: 'ok  ', warning: 'warn', error: 'FAIL' };

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('check what `gateway serve` needs (keys, lock, vault secrets, people, network) and print the command that fixes each gap')
    .addHelpText(
      'after',
      '\nChecks, in the order you set them up: gateway.url (https outside loopback), the listen address is free\n' +
        '(gateway.listen, else where gateway.url points on loopback, else 127.0.0.1:8080), trust.keys, tools.lock\n' +
        'verifies and every source has a publication in use, the vault opens and holds every secret gateway.yaml\n' +
        'names (credentials, the admin token), somebody can sign in (a local person or OIDC), and every upstream\n' +
        'server on a loopback or private address is allowed under network.allowPrivateNetworks.\n' +
        '\nExit codes: 0 ready to serve (warnings allowed), 1 something is missing (each FAIL line says how to fix\n' +
        'it), 3 gateway.yaml unreadable. --json gives {ok, findings:[{check, level, message, fix}]}.\n' +
        '\nExamples:\n' +
        '  gateway doctor\n' +
        '  gateway doctor --json | jq \'.findings[] | select(.level != "ok")\'',
    )
    .action(async (_options: unknown, command: Command) => {
      const context = contextFrom(command);
      const loaded = await loadConfig(context.configPath);
      const report = await diagnose(loaded, { lockPath: context.lockPath });
      const lines: string[] = [];
      for (const finding of report.findings) {
        lines.push(`${MARK[finding.level]}  ${finding.check.padEnd(12)} ${finding.message}`);
        if (finding.fix && finding.level !== 'ok') lines.push(`      ${''.padEnd(12)} fix: ${finding.fix}`);
      }
      lines.push(
        report.ok
          ? 'ready: `gateway serve` will serve these tools'
          : 'not ready: fix the FAIL lines above, then run `gateway doctor` again',
      );
      printResult(context, lines, report);
      // 1, as for `diff --exit-code`: a finding, not a failure of the command itself.
      if (!report.ok) process.exitCode = 1;
    });
}
