import type { Command } from 'commander';
import { loadConfig, type AdminStatus, type LoadedConfig } from '@gateway/core';
import { diagnose, type DoctorFinding } from '@gateway/runtime';
import { adminClient } from '../admin-client.js';
import { contextFrom, printResult, type CliContext } from '../context.js';

/** How long doctor waits for a running gateway's admin API before leaving its webhooks unchecked. */
const RUNNING_GATEWAY_TIMEOUT_MS = 2_000;

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
        'server on a loopback or private address is allowed under network.allowPrivateNetworks. With\n' +
        'storage.kind postgres: the connection string is in the vault, the database answers, its migrations are\n' +
        'applied (DATABASE_UNREACHABLE, DATABASE_MIGRATIONS_PENDING, …). When a gateway\n' +
        'is running (its admin API answers), a paused or disabled webhook endpoint is a warning.\n' +
        '\nExit codes: 0 ready to serve (warnings allowed), 1 something is missing (each FAIL line says how to fix\n' +
        'it), 3 gateway.yaml unreadable. --json gives {ok, findings:[{check, level, code?, message, fix}]}.\n' +
        '\nExamples:\n' +
        '  gateway doctor\n' +
        '  gateway doctor --json | jq \'.findings[] | select(.level != "ok")\'',
    )
    .action(async (_options: unknown, command: Command) => {
      const context = contextFrom(command);
      const loaded = await loadConfig(context.configPath);
      // The server package owns storage and its migrations; it is loaded only when there is a database to check.
      const checkStorage = loaded.config.storage?.kind === 'postgres' ? (await import('@gateway/server')).storageFindings : undefined;
      const report = await diagnose(loaded, { lockPath: context.lockPath, ...(checkStorage ? { checkStorage } : {}) });
      report.findings.push(...(await runningWebhookFindings(context, loaded)));
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

/**
 * The webhook endpoints of a running gateway, from its admin API: a paused endpoint (an event ran out of
 * attempts; later ones wait) or a disabled one (410 Gone) is a warning with the command that resumes it. No
 * finding when no endpoint is configured or no gateway answers (doctor also runs before the first serve).
 */
async function runningWebhookFindings(context: CliContext, loaded: LoadedConfig): Promise<DoctorFinding[]> {
  if (Object.keys(loaded.config.webhooks ?? {}).length === 0) return [];
  let status: AdminStatus;
  try {
    const admin = await adminClient(context, { timeout: String(RUNNING_GATEWAY_TIMEOUT_MS) });
    status = await admin.request<AdminStatus>('GET', 'status');
  } catch {
    return [];
  }
  return (status.webhooks ?? []).map((endpoint): DoctorFinding => {
    if (endpoint.paused) {
      return {
        check: 'webhooks',
        level: 'warning',
        message:
          `webhook endpoint ${endpoint.name} is PAUSED at sequence ${endpoint.paused.sequence ?? '?'} since ${endpoint.paused.at} ` +
          `(${endpoint.pending} event(s) waiting): ${endpoint.paused.reason ?? 'attempts exhausted'}`,
        fix: `gateway webhooks resume ${endpoint.name}   # once the receiver answers again`,
      };
    }
    if (endpoint.disabled) {
      return {
        check: 'webhooks',
        level: 'warning',
        message:
          `webhook endpoint ${endpoint.name} is disabled (410 Gone) since ${endpoint.disabled.at} ` +
          `(${endpoint.pending} event(s) waiting)`,
        fix: `gateway webhooks resume ${endpoint.name}   # once the receiver takes events again`,
      };
    }
    return { check: 'webhooks', level: 'ok', message: `webhook endpoint ${endpoint.name} is delivering (${endpoint.pending} pending)` };
  });
}
