import type { Command } from 'commander';
import { describeNotOffered, type AdminStatus } from '@gateway/core';
import { adminClient, withAdminOptions, type AdminClientOptions } from '../admin-client.js';
import { contextFrom, printResult, table } from '../context.js';

export function registerStatus(program: Command): void {
  withAdminOptions(program.command('status').description("show a running gateway's publications and drift (reads its admin API)"))
    .addHelpText(
      'after',
      '\nThe admin token comes from GATEWAY_ADMIN_TOKEN, else from the vault (admin.tokenSecret, default\n' +
        'admin-token; store one with `gateway secrets set admin-token`).\n' +
        '\nExamples:\n' +
        '  gateway status\n' +
        '  gateway status --url https://gateway.example.com --json',
    )
    .action(async (options: AdminClientOptions, command: Command) => {
      const context = contextFrom(command);
      const admin = await adminClient(context, options);
      const status = await admin.request<AdminStatus>('GET', 'status');
      printResult(context, describeStatus(admin.baseUrl, status), status);
    });
}

function describeStatus(baseUrl: string, status: AdminStatus): string[] {
  const lines = [`gateway ${baseUrl}: ${status.ready ? 'ready' : 'not ready (no verified tools.lock loaded)'}`, '', 'publications'];
  if (status.publications.length === 0) lines.push('  none in use');
  else {
    lines.push(
      ...table([
        ['SOURCE', 'PUBLICATION', 'TOOLS', 'BLOCKED'],
        ...status.publications.map((publication) => [
          publication.source,
          publication.id,
          String(publication.toolCount),
          String(publication.blockedCount ?? 0),
        ]),
      ]),
    );
  }
  for (const publication of status.publications) {
    const notOffered = publication.notOffered ?? [];
    if (notOffered.length === 0) continue;
    lines.push(
      '',
      `${publication.source} ${publication.id} does not offer ${notOffered.length} operation${notOffered.length === 1 ? '' : 's'}:`,
    );
    for (const entry of notOffered) lines.push(`  ${describeNotOffered(entry)}`);
  }
  if (status.lockReload?.status === 'refused') {
    lines.push(
      '',
      `tools.lock: the change at ${status.lockReload.at} was REFUSED; the last good lock keeps serving`,
      `  ${status.lockReload.code}: ${status.lockReload.message}`,
      '  fix it and save again (`gateway verify` shows every problem)',
    );
  } else if (status.lockReload) {
    lines.push(
      '',
      `tools.lock: last ${status.lockReload.status === 'swapped' ? 'reloaded' : status.lockReload.status} at ${status.lockReload.at}`,
    );
  }
  lines.push('', 'drift', ...describeDrift(status.drift));
  if (status.mcpRefusals) {
    const counted = Object.entries(status.mcpRefusals).filter(([, count]) => count > 0);
    lines.push(
      '',
      `refused /mcp requests since start (this process): ${
        counted.length === 0 ? 'none' : counted.map(([reason, count]) => `${reason} ${count}`).join(', ')
      }`,
    );
  }
  if (status.webhooks) lines.push('', 'webhooks', ...describeWebhooks(status.webhooks));
  return lines;
}

/** The webhooks part of `gateway status` (also what `gateway doctor` reports of a running gateway). */
export function describeWebhooks(webhooks: NonNullable<AdminStatus['webhooks']>): string[] {
  if (webhooks.length === 0) return ['  none configured'];
  const lines: string[] = [];
  for (const endpoint of webhooks) {
    if (endpoint.paused) {
      lines.push(
        `  ${endpoint.name}: PAUSED at sequence ${endpoint.paused.sequence ?? '?'} since ${endpoint.paused.at}, ` +
          `${endpoint.pending} event(s) waiting`,
        ...(endpoint.paused.reason ? [`    ${endpoint.paused.reason}`] : []),
        `    once the receiver is back: gateway webhooks resume ${endpoint.name}`,
      );
    } else if (endpoint.disabled) {
      lines.push(
        `  ${endpoint.name}: disabled (410 Gone) since ${endpoint.disabled.at}, ${endpoint.pending} event(s) waiting`,
        `    gateway webhooks resume ${endpoint.name}`,
      );
    } else {
      lines.push(`  ${endpoint.name}: active, ${endpoint.pending} pending`);
    }
  }
  return lines;
}

/** The drift part of `gateway status` (also what `gateway drift check` prints). */
export function describeDrift(drift: AdminStatus['drift']): string[] {
  const lines: string[] = [];
  if (drift.length === 0) lines.push('  not watched');
  for (const source of drift) {
    lines.push(
      `  ${source.source}: ${source.status}${
        source.checkedAt ? `, checked ${source.checkedAt}` : ', not checked yet'
      } (${source.document})`,
    );
    if (source.error) lines.push(`    last check failed: ${source.error.code}: ${source.error.message}`);
    for (const blocked of source.blockedTools) lines.push(`    blocked ${blocked.tool}: ${blocked.reason}`);
    if (source.proposal) {
      const list = (names: string[]): string => (names.length ? names.join(', ') : '-');
      const name = source.proposal.id ? `${source.proposal.id} (proposed)` : 'proposal';
      const as = source.proposal.id ? ` as ${source.proposal.id}` : '';
      lines.push(
        `    ${name} from ${source.proposal.digest}, detected ${source.proposal.detectedAt}`,
        ...(source.proposal.summary ?? []).map((line) => `      ${line}`),
        `      changed ${list(source.proposal.changed)}`,
        `      removed ${list(source.proposal.removed)}`,
        `      added   ${list(source.proposal.added)}`,
        `    review it: \`gateway import ${source.source}\` writes it into tools.lock${as}; then review and publish`,
      );
    }
  }
  return lines;
}
